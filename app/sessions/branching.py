"""Branching sessions (R-BRANCH-1..3): `session/fork`, `session/rollback` and `session/steer` as every surface runs
them.

A fork is a new stored session of the caller's; nothing of it is live until it is opened (`session/new` with its
id, `session/load` on ACP) or prompted, which rehydrates it from its own rows and snapshot like any stored session.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from app.auth.policy import Principal
from app.sessions.access import check_owner
from app.sessions.errors import NoRunningTurn, SessionBusy
from app.sessions.events import RolledBack, SessionEvent
from app.sessions.live.session import LiveSession
from app.sessions.mode import SessionMode
from app.sessions.reading import readable_mode

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.forks import Forked
    from app.sessions.store.rollbacks import RolledBack as RolledBackTurns
    from app.sessions.store.session_store import SessionStore
    from app.sessions.store.types import Surface, TranscriptRow

__all__ = ["SessionBranching"]


class SessionBranching:
    """Forks the sessions of one daemon's store; `live` is the registry's live table (read only)."""

    def __init__(
        self,
        store: SessionStore,
        live: dict[str, LiveSession],
        announce: Callable[[LiveSession, SessionEvent], Awaitable[None]],
    ) -> None:
        self._store = store
        self._live = live
        self._announce = announce  # to the session's followers (`Turns.announce`)

    async def fork(self, principal: Principal, session_id: str, at_index: int | None = None) -> Forked:
        """A child of the caller's (R-BRANCH-1): the parent's rows before `at_index` (a user prompt row; None: every
        row of its finished turns) and its retained context there. Raises BadForkPoint, SessionNotFound,
        SessionNotOwned, SessionKilled."""
        from app.sessions.store.forks import ForkRequest  # the store's module: SQLAlchemy only once it is used

        mode = await self._readable_mode(principal, session_id)
        child_id = f"s_{uuid.uuid4().hex}"
        return await self._store.forks.fork(ForkRequest(mode, session_id, child_id, principal.id, at_index))

    async def rollback(self, principal: Principal, session_id: str, turns: int) -> RolledBackTurns:
        """Drop the session's last `turns` completed turns (R-BRANCH-2), announced to its followers as
        `rolled_back`. Raises SessionBusy while a turn runs, BadRollback, SessionNotFound, SessionNotOwned."""
        live = self._live.get(session_id)
        if live is not None and live.busy:
            check_owner(principal, live.owner)
            raise SessionBusy
        mode = await self._readable_mode(principal, session_id)
        surface = live.surface if live is not None else await self._surface(session_id, mode)
        done = await self._store.rollbacks.rollback(session_id, turns, mode=mode, surface=surface)
        live = self._live.get(session_id)
        if live is not None:
            event: RolledBack = {
                "session_id": session_id, "type": "rolled_back", "turns": done.turns, "from_index": done.from_index
            }  # fmt: skip
            await self._announce(live, event)
        return done

    async def steer(self, principal: Principal, session_id: str, text: str) -> int | None:
        """`text` joins the session's running turn as a user message at its next provider step (R-BRANCH-3):
        its transcript index once taken, None when the turn ended first. Raises NoRunningTurn when no turn runs,
        SessionNotFound, SessionNotOwned."""
        live = self._live.get(session_id)
        if live is None:
            await self._readable_mode(principal, session_id)  # someone else's, or no such session: that error
            raise NoRunningTurn
        check_owner(principal, live.owner)
        if not live.busy:
            raise NoRunningTurn
        # Shielded: a caller that goes away does not take its text back (it joins, as a prompt would run).
        return await asyncio.shield(live.steers.offer(text))

    async def messages_with_rolled_back(
        self, principal: Principal, session_id: str, *, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int]:
        """A page of the transcript with its rolled-back rows too (`includeRolledBack`, R-BRANCH-2)."""
        mode = await self._readable_mode(principal, session_id)
        return await self._store.rollbacks.messages(session_id, mode=mode, limit=limit, before=before)

    async def _surface(self, session_id: str, mode: SessionMode) -> Surface:
        record = await self._store.get(session_id, mode)
        return "rpc" if record is None else record.surface

    async def _readable_mode(self, principal: Principal, session_id: str) -> SessionMode:
        return await readable_mode(self._store, self._live, principal, session_id)
