"""Where a session's updates go: the receiver side of a live session, as the session and its followers see it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.sessions.events import SessionEvent

__all__ = ["UpdateSink"]


class UpdateSink(Protocol):
    """Somewhere `session/update` notifications go (a connection, a gateway chat stream, a test)."""

    @property
    def principal_id(self) -> str | None: ...  # read only: whose updates these are

    @property
    def closed(self) -> bool: ...

    async def send_updates(self, updates: Sequence[SessionEvent], frames: list[bytes] | None = None) -> None:
        """Deliver updates in order; waits while the receiver is slow; raises if it is gone. `frames`, when
        given, are the updates already encoded in the standard dialect (one per update), shared by receivers."""
        ...

    def drop(self) -> None:
        """Cut the receiver off: it missed updates that can no longer be sent (it reattaches and is told so)."""
        ...
