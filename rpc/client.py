"""A small NDJSON JSON-RPC client for the local endpoint, used by the `zeroclaw` CLI commands.

Responses are matched by id; notifications and daemon→client requests go to `on_message`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["Client", "RemoteError", "open_endpoint", "open_pipe"]

_READ_LIMIT = 64 * 1024 * 1024  # above any frame limit the daemon may be configured with


async def open_endpoint(
    endpoint: str, *, limit: int = _READ_LIMIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the local endpoint (`Paths.endpoint`): the named pipe on Windows, the Unix socket elsewhere.

    The errors are the OS's: `FileNotFoundError` when nobody serves it (on Windows too: ERROR_FILE_NOT_FOUND),
    `ConnectionRefusedError` for a socket nobody listens on, `PermissionError` for another user's endpoint."""
    if sys.platform == "win32":
        return await open_pipe(endpoint, limit=limit)
    return await asyncio.open_unix_connection(endpoint, limit=limit)


async def open_pipe(
    name: str, *, limit: int = _READ_LIMIT, loop: asyncio.AbstractEventLoop | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the named pipe `name` through the loop's `create_pipe_connection` (asyncio's ProactorEventLoop,
    the Windows default; it waits out ERROR_PIPE_BUSY itself) and wrap it in streams, as `open_unix_connection`
    does for a socket."""
    loop = loop or asyncio.get_running_loop()
    create = getattr(loop, "create_pipe_connection", None)
    if create is None:
        raise RuntimeError("connecting to a named pipe needs asyncio's ProactorEventLoop (the Windows default)")
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await create(lambda: protocol, name)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


class RemoteError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.error = error


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.on_message: Callable[[dict[str, Any]], None] = lambda _msg: None
        # Called once when the daemon ends the connection (not when `close()` does).
        self.on_close: Callable[[], None] = lambda: None
        self._closing = False
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(cls, path: str) -> Client:
        reader, writer = await open_endpoint(path)
        return cls(reader, writer)

    async def call(self, method: str, params: Any = None) -> Any:
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
        if params is not None:
            frame["params"] = params
        await self.send(frame)
        reply = await future
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply.get("result")

    async def send(self, frame: Any) -> None:
        self._writer.write(orjson.dumps(frame) + b"\n")
        await self._writer.drain()

    async def send_raw(self, line: bytes) -> None:
        self._writer.write(line.rstrip(b"\n") + b"\n")
        await self._writer.drain()

    async def _read_loop(self) -> None:
        try:
            while line := await self._reader.readline():
                try:
                    message = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(message, dict):
                    rid = message.get("id")
                    future = self._pending.pop(rid, None) if type(rid) is int and "method" not in message else None
                    if future is not None and not future.done():
                        future.set_result(message)
                        continue
                self.on_message(message)
        except OSError:
            pass  # a reset connection ends like a closed one
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the daemon closed the connection"))
            if not self._closing:
                self.on_close()

    async def close(self) -> None:
        self._closing = True
        self._writer.close()
        self._reader_task.cancel()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
