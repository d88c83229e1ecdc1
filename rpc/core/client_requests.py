"""The daemon→client direction of one connection (R-BIDI): our requests to the peer, awaiting its answers.

Requests are numbered `zc-out-N`, kept until the peer's response comes back (`Connection` routes it here), and
failed at once when the peer can answer nothing more. This table never shares ids with the peer's own requests
(an id in flight both ways is fine, R-BIDI-2).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from rpc.core.envelope import Response, encode_notifications, encode_request
from rpc.transports.base import ConnectionClosed, FrameTransport

__all__ = ["ClientRequests", "PeerError", "PendingLimitReached"]

log = logging.getLogger("zeroclaw.rpc")


class PeerError(Exception):
    """The client answered one of our requests with an error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__("client answered with an error")
        self.error = error


class PendingLimitReached(Exception):
    """Too many daemon→client requests already await an answer on this connection."""


class ClientRequests:
    __slots__ = ("_gone_callbacks", "_next", "_pending", "ended", "max_pending")

    def __init__(self, max_pending: int) -> None:
        self.max_pending = max_pending
        self.ended = False  # the peer can answer nothing more (EOF or disconnect)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._next = 0
        self._gone_callbacks: list[Callable[[], None]] = []

    async def ask(
        self, transport: FrameTransport, method: str, params: Any, timeout: float, withdraw: str | None = None
    ) -> Any:
        """`withdraw`: a notification (`$/cancel_request {requestId}`) telling the peer, when the wait is
        cancelled, that the request no longer needs an answer."""
        if self.ended:
            raise ConnectionClosed
        if len(self._pending) >= self.max_pending:
            raise PendingLimitReached
        rid = f"zc-out-{self._next}"
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            transport.send(encode_request(rid, method, params))
            return await asyncio.wait_for(future, timeout)
        except asyncio.CancelledError:
            if withdraw is not None and not self.ended:
                transport.send(encode_notifications(withdraw, [{"requestId": rid}])[0])
            raise
        finally:
            self._pending.pop(rid, None)

    def answered(self, response: Response, peer_label: str) -> None:
        future = self._pending.pop(response.id, None) if type(response.id) is str else None
        if future is None or future.done():
            log.info("ignored a response with an unknown id from %s", peer_label)
            return
        if response.error is not None:
            future.set_exception(PeerError(response.error))
        else:
            future.set_result(response.result)

    def when_gone(self, callback: Callable[[], None]) -> None:
        if self.ended:
            callback()
        else:
            self._gone_callbacks.append(callback)

    def end(self) -> None:
        """The peer can answer nothing more: fail what waits on it, then tell who asked to know."""
        if self.ended:
            return
        self.ended = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed())
        self._pending.clear()
        callbacks, self._gone_callbacks = self._gone_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("a callback for a connection that can no longer answer failed")
