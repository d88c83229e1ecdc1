"""One peer's state (R-WIRE-5..7, R-BIDI): who it is, what it has in flight, and its outbound channel.

A connection decides nothing: the dispatcher (`rpc.dispatcher`) classifies its frames, admits and runs its calls
and fills its in-flight table. What the connection does itself is the daemon→client direction (`ClientChannel`):
it numbers our requests `zc-out-N`, keeps them in its pending table until the dispatcher routes the answer back
(`response_received`), and fails them at once when the peer can answer nothing more. The two directions never
share a table (an id in flight both ways is fine, R-BIDI-2).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rpc.context import Authority, Surface, Terminal
from rpc.dialect import Dialect
from rpc.envelope import Id, Response, encode_request
from rpc.transports.base import ConnectionClosed, FrameTransport, Peer

if TYPE_CHECKING:
    from rpc.context import CallContext

__all__ = ["Connection", "PeerError", "PendingLimitReached"]

log = logging.getLogger("zeroclaw.rpc")


class PeerError(Exception):
    """The client answered one of our requests with an error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__("client answered with an error")
        self.error = error


class PendingLimitReached(Exception):
    """Too many daemon→client requests already await an answer on this connection."""


class Connection:
    __slots__ = (
        "__weakref__",
        "_gone_callbacks",
        "_next_out",
        "_pending",
        "authority",
        "background",
        "barrier",
        "capabilities",
        "closed",
        "context",
        "inflight",
        "input_closed",
        "max_inflight",
        "max_pending",
        "peer",
        "sink",
        "surface",
        "terminal",
        "transport",
    )

    def __init__(
        self, transport: FrameTransport, peer: Peer, surface: Surface, *, max_inflight: int, max_pending: int
    ) -> None:
        self.transport = transport
        self.peer = peer
        self.surface = surface
        self.authority = Authority()
        self.capabilities: Mapping[str, Any] = {}
        self.terminal: Terminal | None = None  # zerocode's identity and environment (never logged, R-ZC-6)
        self.max_inflight = max_inflight
        self.max_pending = max_pending
        self.inflight: dict[Id, asyncio.Task[Any]] = {}  # the dispatcher's: requests taken, not yet answered
        self.background: set[asyncio.Task[Any]] = set()  # notification handlers: no id, no answer
        self.barrier = False  # `initialize` runs: nothing more is read until it is answered
        self.closed = False
        self.input_closed = False  # the peer ended its sending side (R-WIRE-9): it can answer nothing more
        self.sink: object = None  # rpc.session_bridge.sink_for's, kept here so it dies with the connection
        self.context: CallContext  # set by the dispatcher that accepted it
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._next_out = 0
        self._gone_callbacks: list[Callable[[], None]] = []

    @property
    def saturated(self) -> bool:
        """Stop reading: an in-flight slot is missing, `initialize` is running, or the peer is not reading."""
        return self.barrier or self.transport.writing_paused or len(self.inflight) >= self.max_inflight

    @property
    def idle(self) -> bool:
        """Nothing taken from the peer is still running (no request awaiting its answer, no notification)."""
        return not self.inflight and not self.background

    # -- ClientChannel -----------------------------------------------------------------------------------

    @property
    def answerable(self) -> bool:
        return not self.closed and not self.input_closed

    @property
    def principal_id(self) -> str | None:
        return self.authority.principal_id

    @property
    def dialect(self) -> Dialect:
        return self.authority.dialect

    async def send_encoded(self, frames: list[bytes]) -> None:
        """Send encoded notification frames, in order, waiting while the peer is not reading (bounded outbound
        buffer)."""
        transport = self.transport
        if transport.writing_paused:
            await transport.wait_writable()
        if self.closed:
            raise ConnectionClosed
        transport.send_many(frames)

    async def request(self, method: str, params: Any, *, timeout: float) -> Any:
        """Ask the client; raise `PeerError`, `TimeoutError`, `ConnectionClosed` or `PendingLimitReached`."""
        if self.closed or self.input_closed:  # a peer that ended its input can never answer (R-WIRE-9)
            raise ConnectionClosed
        if len(self._pending) >= self.max_pending:
            raise PendingLimitReached
        rid = f"zc-out-{self._next_out}"
        self._next_out += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            self.transport.send(encode_request(rid, method, params))
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(rid, None)

    def response_received(self, response: Response) -> None:
        future = self._pending.pop(response.id, None) if type(response.id) is str else None
        if future is None or future.done():
            log.info("ignored a response with an unknown id from %s", self.peer.label)
            return
        if response.error is not None:
            future.set_exception(PeerError(response.error))
        else:
            future.set_result(response.result)

    def when_gone(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the peer can answer nothing more: at EOF or disconnect, whichever comes first (at
        once if that is already so). What the daemon asked it (an approval, say) can then be settled at once."""
        if self.closed or self.input_closed:
            callback()
        else:
            self._gone_callbacks.append(callback)

    # -- the end -----------------------------------------------------------------------------------------

    def input_ended(self) -> None:
        """The peer ended its sending side (EOF, R-WIRE-9). What it sent is still answered, but it can answer
        nothing more: our pending requests to it fail at once, as on disconnect, and new ones fail too."""
        if self.input_closed or self.closed:
            return
        self.input_closed = True
        self._fail_pending()

    def lost(self) -> bool:
        """The peer is gone: cancel what runs for it and fail what waits on it. False if it was gone already."""
        if self.closed:
            return False
        self.closed = True
        for task in (*self.inflight.values(), *self.background):
            task.cancel()
        self._fail_pending()
        return True

    def release(self) -> None:
        """After the close listeners ran: drop the `CallContext` and the session sink, which both hold this
        connection (as `client`). Kept, every closed connection would be a cycle that only the cyclic GC frees, and
        its pauses are what a busy daemon's slowest answers wait for (docs/limits.md "Garbage"). Calls still running
        hold their own context, and a turn still streaming its own sink. Called once, by the dispatcher's
        `connection_lost`."""
        del self.context
        self.sink = None

    def _fail_pending(self) -> None:
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
