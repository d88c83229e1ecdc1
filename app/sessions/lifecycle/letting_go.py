"""Live sessions leaving memory while they stay stored: released by a one-shot caller, or unloaded to make room.

A live session with no running turn and no attached connection is only memory (SPEC §5, `max_sessions`): letting
it go loses nothing, since its record stays open and the next use brings it back as it was stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from app.sessions.live.session import LiveSession
from app.sessions.mode import SessionMode

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.session_store import SessionStore

__all__ = ["LettingGo", "idle"]

log = logging.getLogger("zeroclaw.sessions")


def idle(live: LiveSession) -> bool:
    """No running turn and no attached connection: nothing but memory would be lost by letting it go."""
    return not live.busy and all(sink.closed for sink in live.watchers)


class LettingGo:
    """Takes idle sessions out of the live table, storing the last update number each one sent, so the next
    bring-up numbers on without a jump (R-MULTI-1). Remembers which ones it unloaded to make room: those come back
    on any use, as if they had stayed live."""

    def __init__(self, store: SessionStore, live: dict[str, LiveSession]) -> None:
        self._store = store
        self._live = live
        self._storing: set[asyncio.Task[None]] = set()  # exact seqs of released sessions being stored
        # Sessions unloaded to make room and not used since, with their mode (ids are per mode).
        self.unloaded: dict[str, SessionMode] = {}

    def release(self, session_id: str) -> bool:
        """Forget an idle live session; its durable record stays open, so the next use opens it again. False
        (and nothing done) when it is not live or not idle."""
        live = self._live.get(session_id)
        if live is None or not idle(live):
            return False
        del self._live[session_id]
        if live.seq != live.seq_reserved:
            task = asyncio.get_running_loop().create_task(self.store_exact_seq(live))
            self._storing.add(task)
            task.add_done_callback(self._storing.discard)
        return True

    def unload_least_recent(self, pinned: Collection[str]) -> bool:
        """Unload the least recently used idle session that no one-shot call holds (`pinned`); False if every
        live session is busy, attached or held. The live table is kept in order of use, oldest first."""
        victim = next((live for sid, live in self._live.items() if sid not in pinned and idle(live)), None)
        if victim is None or not self.release(victim.session_id):
            return False
        self.unloaded[victim.session_id] = victim.mode
        log.info(
            "unloaded idle session %s to make room for another (max_sessions); it comes back on use", victim.session_id
        )
        return True

    async def store_exact_seq(self, live: LiveSession) -> None:
        """The last seq sent replaces the reservation, so the next bring-up numbers on without a jump."""
        if live.seq_reserved == live.seq:
            return
        try:
            await self._store.store_seq(live.session_id, live.seq, mode=live.mode, reserved=live.seq_reserved)
        except Exception:  # the reservation stays: numbering jumps ahead at the next bring-up, never repeats
            log.warning("could not store a session's last update number", exc_info=True)
            return
        live.seq_reserved = live.seq

    async def drain(self) -> None:
        """Wait for the stores of released sessions' numbers still under way (at shutdown)."""
        if self._storing:
            await asyncio.wait(self._storing)
