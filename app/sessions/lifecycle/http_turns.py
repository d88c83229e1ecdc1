"""Sessions lent to one-shot callers (R-GW-2, R-GW-3): the lifecycle rule of a turn run over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from app.sessions.errors import SessionBusy

if TYPE_CHECKING:
    from app.sessions.registry import SessionRegistry

__all__ = ["HttpTurns"]


class HttpTurns:
    """Sessions lent to callers that do not stay: an HTTP call (the REST prompt, a webhook) runs one turn and is
    gone. One such call per session at a time, and the live-session table is left as it was found: a session the
    call had to bring to life is released after its turn, unless a client is watching it."""

    def __init__(self, sessions: SessionRegistry) -> None:
        self._sessions = sessions
        self._busy = sessions.pinned  # held by a call: busy to a second one, and never unloaded to make room

    @asynccontextmanager
    async def hold(self, session_id: str, *, created: bool = False) -> AsyncIterator[None]:
        """Claim `session_id` for one call; a second concurrent one is busy (`-32002` → 409). This also
        closes the window in which two calls could both bring the same stored session to life. On the way out the
        session is released if it was not live before the call (`created`: the caller has just created it)."""
        if session_id in self._busy:
            raise SessionBusy
        self._busy.add(session_id)
        was_live = not created and session_id in self._sessions.live
        try:
            yield
        finally:
            self._busy.discard(session_id)
            if not was_live:
                self._release_when_idle(session_id)

    def _release_when_idle(self, session_id: str) -> None:
        live = self._sessions.live.get(session_id)
        turn = live.turn if live is not None else None
        if turn is not None and not turn.done():  # `live.busy`, spelled so the type checker sees the turn
            # The call ended before a turn did (the request was cancelled; the turn is shielded and goes on):
            # release once it is over, unless a call holds the session again by then.
            turn.add_done_callback(lambda _: session_id in self._busy or self._sessions.release(session_id))
        else:
            self._sessions.release(session_id)
