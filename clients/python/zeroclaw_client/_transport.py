"""A JSON-RPC 2.0 peer over one channel (a line of NDJSON on the Unix socket, a text frame on the gateway's
WebSocket): calls correlated by id, notifications to their handlers in arrival order, and the daemon's own
requests answered by a registered handler (exactly one answer per id; none registered: -32601)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, Self

__all__ = ["Channel", "Connection", "ConnectionClosed", "RpcError"]

_log = logging.getLogger("zeroclaw_client")


class Channel(Protocol):
    """One message per `send` / `receive`; `receive` returns None once the peer has closed."""

    async def send(self, text: str) -> None: ...
    async def receive(self) -> str | None: ...
    async def close(self) -> None: ...


class RpcError(Exception):
    """The daemon answered with an error: `code`, `message` and `data` (with `data["kind"]`, docs/protocol.md)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(Exception):
    """The connection closed while a call was out (the daemon may have received it)."""


class Connection:
    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._notification_handlers: dict[str, list[Callable[[Any], Any]]] = {}
        self._request_handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._reader.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(self._reader, *self._tasks, return_exceptions=True)
        await self._channel.close()

    async def _call(self, method: str, required: dict[str, Any], optional: dict[str, Any]) -> Any:
        """Call `method` by name; an optional param given as None is left out (the daemon's default)."""
        params = _params(required, optional)
        if self._reader.done():
            raise ConnectionClosed("the connection is closed")
        call_id = next(self._ids)
        answer = self._pending[call_id] = asyncio.get_running_loop().create_future()
        try:
            await self._send({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
            return await answer
        finally:
            self._pending.pop(call_id, None)

    async def _notify(self, method: str, required: dict[str, Any], optional: dict[str, Any]) -> None:
        """Send a notification (a method without a result): no id, no answer."""
        await self._send({"jsonrpc": "2.0", "method": method, "params": _params(required, optional)})

    def _on_notification(self, method: str, handler: Callable[[Any], Any]) -> None:
        self._notification_handlers.setdefault(method, []).append(handler)

    def _on_request(self, method: str, handler: Callable[[Any], Awaitable[Any]]) -> None:
        self._request_handlers[method] = handler

    async def _send(self, message: dict[str, Any]) -> None:
        await self._channel.send(json.dumps(message, separators=(",", ":"), ensure_ascii=False))

    async def _read(self) -> None:
        try:
            while (text := await self._channel.receive()) is not None:
                message = json.loads(text)
                for one in message if isinstance(message, list) else [message]:
                    self._dispatch(one)
        finally:
            for answer in self._pending.values():
                if not answer.done():
                    answer.set_exception(ConnectionClosed("the connection closed while the call was out"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._spawn(self._answer(message["id"], method, message.get("params")))
        elif isinstance(method, str):
            for handler in self._notification_handlers.get(method, ()):
                try:
                    outcome = handler(message.get("params"))
                except Exception:  # a handler's bug is not the connection's end
                    _log.exception("the %s handler failed", method)
                    continue
                if inspect.isawaitable(outcome):
                    self._spawn(outcome)
        else:
            answer = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if answer is None or answer.done():
                return
            if "error" in message:
                error = message["error"]
                answer.set_exception(RpcError(error.get("code", 0), error.get("message", ""), error.get("data")))
            else:
                answer.set_result(message.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        handler = self._request_handlers.get(method)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        else:
            try:
                reply["result"] = await handler(params)
            except RpcError as exc:
                reply["error"] = {"code": exc.code, "message": exc.message, "data": exc.data}
            except Exception:
                reply["error"] = {"code": -32603, "message": "Internal error"}
        await self._send(reply)

    def _spawn(self, work: Awaitable[Any]) -> None:
        async def run() -> Any:
            return await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("a handler failed", exc_info=task.exception())


def _params(required: dict[str, Any], optional: dict[str, Any]) -> dict[str, Any]:
    return {**required, **{key: value for key, value in optional.items() if value is not None}}
