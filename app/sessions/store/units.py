"""How the session store runs its units of work: one committed transaction per write, on the dialect's backend,
with the store's caches told as each write begins and ends (`StoreUnits.write`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from sqlalchemy.orm import Session

from app.sessions.store.backend import StoreBackend
from app.sessions.store.context_cache import ContextCache
from app.sessions.store.core_backend import CoreBackend
from app.sessions.store.list_cache import Change, ListCache
from app.sessions.store.sqlite_backend import SqliteBackend
from app.storage.database import Database
from app.storage.faults import Faults

__all__ = ["StoreUnits", "backend_for"]

# Writes that leave a cached context exact (`append`, `update_text`, `save_snapshot` update it).
_KEEPS_CONTEXT: Final = frozenset(
    {"append", "update_text", "finish_turn", "save_snapshot", "store_seq", "configure", "record_usage"}
)

P = ParamSpec("P")
T = TypeVar("T")

# The backend of each SQL dialect (`StoreBackend`); any other dialect runs on SQLAlchemy Core.
_BACKENDS: Final[dict[str, type[CoreBackend]]] = {"sqlite": SqliteBackend}


def backend_for(dialect: str) -> StoreBackend:
    """The units of work for a database of this SQL dialect."""
    return _BACKENDS.get(dialect, CoreBackend)()


class StoreUnits:
    """What the store's parts share: the database, its backend, the fault points, the context and list caches, and
    the one way a write runs (`write`)."""

    def __init__(self, db: Database, faults: Faults) -> None:
        self.db = db
        self.faults = faults
        self.backend = backend_for(db.dialect)
        self.contexts = ContextCache()
        self.lists = ListCache()
        self._endings: set[asyncio.Future[None]] = set()  # cancelled writes not yet known to have ended

    async def write(
        self,
        point: str,
        session_id: str,
        change: Callable[[T], Change] | None,
        unit: Callable[Concatenate[Session, P], T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """One committed transaction; an armed fault fires after the writes are issued, before the commit.

        The caches hear of it as it begins and as it ends. The context cache: appends, text updates and snapshots
        are applied by their callers, finishing a turn changes no context, and anything else (or a write that
        failed) drops the session's cached contexts. The list cache: the write's `change` (what it did to the
        listed records, made from its result) is applied; a write without one (None) empties it. A write whose
        caller was cancelled may still commit, so it ends only once a write queued after it has run.
        """
        contexts, lists = self.contexts, self.lists
        contexts.writing(session_id)
        ticket = lists.write_begins(session_id)
        try:
            result = await self.db.write(self._checked, point, partial(unit, **kwargs), *args)
        except asyncio.CancelledError:
            ending = asyncio.ensure_future(self._end_after_queued_writes(session_id, ticket))
            self._endings.add(ending)
            ending.add_done_callback(self._endings.discard)
            raise
        except BaseException:
            self._ended_unknown(session_id, ticket)
            raise
        contexts.writing(session_id)
        if point not in _KEEPS_CONTEXT:
            contexts.drop(session_id)
        lists.write_ends(session_id, ticket, None if change is None else change(result))
        return result

    async def _end_after_queued_writes(self, session_id: str, ticket: int) -> None:
        """Writes run in submission order (`Database.write`): once this empty one ran, the cancelled one has
        committed or rolled back."""
        with contextlib.suppress(Exception):  # the database closed meanwhile: it let the cancelled write finish
            await self.db.write(_nothing)
        self._ended_unknown(session_id, ticket)

    def _ended_unknown(self, session_id: str, ticket: int) -> None:
        self.contexts.writing(session_id)
        self.contexts.drop(session_id)
        self.lists.write_ends(session_id, ticket)

    def _checked(self, s: Session, point: str, unit: Callable[..., T], *args: Any) -> T:
        result = unit(s, *args)
        s.flush()
        self.faults.check(point)
        return result


def _nothing(_s: Session) -> None:
    """A write that changes nothing: queued behind another, it tells when that one has finished."""
