"""The Transport seam (R-ARCH-1): what the dispatcher needs from the thing that moves a peer's frames.

A transport registers with `Dispatcher.accept`, turns bytes (or WebSocket messages) into frames, hands each to
its connection (`Connection.receive`, which declines a frame while saturated), and calls `Connection.lost` once.
The connection answers through this protocol (`send`) and never sees a socket. Unix sockets and Windows pipes share
`stream.NdjsonProtocol`; the gateway's WebSocket is a third implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ConnectionClosed", "FrameTransport", "Peer"]


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
    # The `[wss]` listener's peers (R-SVC-4): zerocode's remote mode sends neither `env` nor `tui_id`
    # on its first `initialize`, so the listener, not the frame, chooses the zerocode dialect.
    zerocode: bool = False
    # The gateway's `/acp` peers (R-EDIT-1): the route chooses the ACP dialect, `?agent=` the
    # default agent.
    acp: bool = False
    agent: str | None = None


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
