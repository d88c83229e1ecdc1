"""The Transport seam (R-ARCH-1): what the dispatcher needs from the thing that moves a peer's frames.

A transport registers with `Dispatcher.accept`, turns bytes (or WebSocket messages) into frames, hands each to
its connection (`Connection.receive`, which declines a frame while saturated), and calls `Connection.lost` once.
The connection answers through this protocol (`send`) and never sees a socket. Unix sockets and Windows pipes share
`stream.NdjsonProtocol`; the gateway's WebSocket is a third implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from app.config.schema import Limits

__all__ = ["Acceptor", "ConnectionClosed", "FrameTransport", "Peer", "Receiver", "Refusal"]


class ConnectionClosed(Exception):
    """The peer is gone (or was dropped for not reading); nothing more can be sent."""


@dataclass(frozen=True, slots=True)
class Peer:
    """Who is on the other end, as far as the OS tells us."""

    label: str  # audit label: unix:pid=<pid>,uid=<uid> | unix:unknown | pipe:local | ws:<ip>:<port>
    uid: int | None = None
    pid: int | None = None
    remote: bool = False  # WebSocket peers: local-only methods are refused, no uid-based principal
    # A WebSocket upgrade's `Authorization: Bearer`; `initialize` uses it when it has no authToken.
    bearer_token: str | None = field(default=None, repr=False)
    # The dialect its listener chose (an `rpc.core.dialect.Dialect`), whatever its `initialize` says; None: the
    # frame chooses. Typed loosely: transports sit below the core that defines dialects.
    dialect: Any = None
    agent: str | None = None  # `?agent=`: the default agent of its new sessions, for a dialect that has one


class FrameTransport(Protocol):
    def send(self, frame: bytes) -> None:
        """Queue one encoded frame; transports coalesce queued frames into one write."""

    def send_many(self, frames: list[bytes]) -> None:
        """Queue several encoded frames, in order (same as `send` for each, cheaper for a stream's batch)."""

    def close(self) -> None:
        """Flush what is queued, then close."""

    def resume(self) -> None:
        """The connection can take frames again (an in-flight slot or a barrier was released)."""

    @property
    def writing_paused(self) -> bool:
        """True while the peer is not reading and the outbound buffer is above its limit."""

    async def wait_writable(self) -> None:
        """Wait until the outbound buffer has room; raise `ConnectionClosed` if it never does."""

    def queued_bytes(self) -> int:
        """Output queued towards the peer and not yet written to it (read at scrape time, `GET /metrics`)."""


Refusal = Literal["frame_too_large", "not_text"]


class Receiver(Protocol):
    """What a transport feeds: one peer's connection (`rpc.core.connection.Connection`)."""

    def receive(self, line: bytes) -> bool:
        """Take one frame; False while saturated (the transport keeps it and stops reading until `resume`)."""

    @property
    def saturated(self) -> bool: ...

    @property
    def idle(self) -> bool:
        """Nothing taken from the peer is still running."""

    def input_ended(self) -> None:
        """The peer ended its sending side (EOF, or a frame too large): what it sent is still answered."""

    def stalled(self) -> None:
        """The transport cut the peer off for not reading."""

    def lost(self) -> None:
        """The transport is gone (called once)."""


class Acceptor(Protocol):
    """Where a transport registers its peers (`rpc.core.dispatcher.Dispatcher`)."""

    @property
    def limits(self) -> Limits: ...

    def accept(self, transport: FrameTransport, peer: Peer) -> Receiver | None:
        """The peer's connection, or None when it was refused (one error frame queued, then closed)."""

    def refusal(self, reason: Refusal, limit: int) -> bytes:
        """The error frame (`id: null`) for a frame the transport cannot hand over: larger than `limit`
        (R-WIRE-2), or a WebSocket message that is not text (R-WIRE-1)."""
