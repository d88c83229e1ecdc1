"""Ending sessions (R-ACP-8..11): close (resumable), kill (tombstone), delete (gone), and the daemon's shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from app.auth.policy import Principal
from app.sessions.access import check_owner
from app.sessions.errors import SessionNotFound
from app.sessions.lifecycle.bring_up import BringUp
from app.sessions.lifecycle.letting_go import LettingGo
from app.sessions.live.session import LiveSession
from app.sessions.mode import EITHER, SessionMode

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.session_store import SessionStore

__all__ = ["Ending", "stop"]


class Ending:
    """Takes sessions out of the live table for good, in the order the spec asks: a running turn is cancelled
    before the fallible storage step (R-ACP-11), and a failed step leaves an idle live owner registered."""

    def __init__(
        self, store: SessionStore, live: dict[str, LiveSession], bring_up: BringUp, letting_go: LettingGo
    ) -> None:
        self._store = store
        self._live = live
        self._bring_up = bring_up
        self._letting_go = letting_go

    async def close(self, principal: Principal, session_id: str) -> None:
        """Keep the history; a durable session stays resumable (R-ACP-8). One unloaded to make room is closed
        as if it had stayed live."""
        if session_id in self._letting_go.unloaded and session_id not in self._live:
            await self._bring_up.resume(principal, session_id, EITHER)
        live = self._bring_up.owned(principal, session_id)
        await stop(live, "session_removed")
        self._live.pop(session_id, None)
        await self._letting_go.store_exact_seq(live)
        await self._store.close(session_id, mode=live.mode)

    async def kill(self, principal: Principal, session_id: str) -> None:
        await self._destroy(principal, session_id, self._store.kill, "admin_kill")

    async def delete(self, principal: Principal, session_id: str) -> None:
        await self._destroy(principal, session_id, self._store.delete, "session_removed")

    async def shutdown(self) -> None:
        for live in list(self._live.values()):
            await stop(live)
            await self._letting_go.store_exact_seq(live)
        await self._letting_go.drain()

    async def _destroy(
        self, principal: Principal, session_id: str, operation: Callable[[str], Awaitable[object]], cause: str
    ) -> None:
        live = self._live.get(session_id)
        if live is not None and live.mode == SessionMode.CHAT:
            live = None  # a live chat session with this id is a different thing: leave it alone (R-ACP-10)
        record = await self._store.get(session_id)
        if live is None and record is None:
            raise SessionNotFound
        check_owner(principal, live.owner if live is not None else record.owner)  # type: ignore[union-attr]
        forced = False
        if live is not None and live.busy:
            # Signal cancellation before the fallible storage step (R-ACP-11); the owner is gone for good.
            await stop(live, cause)
            self._live.pop(session_id, None)
            forced = True
        await operation(session_id)  # on failure: an inactive live owner stays registered
        self._letting_go.unloaded.pop(session_id, None)
        if live is not None and not forced:
            self._live.pop(session_id, None)


async def stop(live: LiveSession, cause: str = "session_removed") -> None:
    """Cancel a running turn and wait (briefly) until it has written its terminal rows."""
    if live.body is not None and not live.body.done():
        live.cancel_cause = cause
        live.body.cancel()
    if live.turn is not None and not live.turn.done():
        await asyncio.wait({live.turn}, timeout=5)
