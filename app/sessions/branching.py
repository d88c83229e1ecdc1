"""Branching sessions (R-BRANCH-1): `session/fork` as every surface runs it, over the store's forks.

A fork is a new stored session of the caller's; nothing of it is live until it is opened (`session/new` with its
id, `session/load` on ACP) or prompted, which rehydrates it from its own rows and snapshot like any stored session.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from app.auth.policy import Principal
from app.sessions.access import check_owner
from app.sessions.errors import SessionNotFound
from app.sessions.lifecycle.bring_up import stored
from app.sessions.live.session import LiveSession
from app.sessions.mode import EITHER, SessionMode

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.forks import Forked
    from app.sessions.store.session_store import SessionStore

__all__ = ["SessionBranching"]


class SessionBranching:
    """Forks the sessions of one daemon's store; `live` is the registry's live table (read only)."""

    def __init__(self, store: SessionStore, live: dict[str, LiveSession]) -> None:
        self._store = store
        self._live = live

    async def fork(self, principal: Principal, session_id: str, at_index: int | None = None) -> Forked:
        """A child of the caller's (R-BRANCH-1): the parent's rows before `at_index` (a user prompt row; None: every
        row of its finished turns) and its retained context there. Raises BadForkPoint, SessionNotFound,
        SessionNotOwned, SessionKilled."""
        from app.sessions.store.forks import ForkRequest  # the store's module: SQLAlchemy only once it is used

        mode = await self._readable_mode(principal, session_id)
        child_id = f"s_{uuid.uuid4().hex}"
        return await self._store.forks.fork(ForkRequest(mode, session_id, child_id, principal.id, at_index))

    async def _readable_mode(self, principal: Principal, session_id: str) -> SessionMode:
        live = self._live.get(session_id)
        if live is not None:
            check_owner(principal, live.owner)
            return live.mode
        record = await stored(self._store, session_id, EITHER)
        if record is None:
            raise SessionNotFound
        check_owner(principal, record.owner)
        return record.mode
