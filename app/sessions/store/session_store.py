"""The durable session store (R-ACP): sessions, their visible transcript, turns and retained-context snapshots.

`SessionStore` keeps the sessions' records; `store.transcript` (`Transcript`) their rows, turns and snapshots;
`store.lists` (`SessionLists`) the `session/list` pages. Every public write is one committed transaction, i.e. one
checkpoint (R-ACP-4): what a method returned is on disk, and what it raised never happened (the faults of
`app.storage.faults` prove it on a real rollback). Ownership beyond "create refuses another principal's id" is the
caller's rule (admins act on any session). docs/sessions-storage.md has the schema, the checkpoint policy and the
recovery algorithm.
"""

from __future__ import annotations

import builtins
from functools import partial
from os import PathLike
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.list_pages import ListQuery, Page, Position
from app.sessions.mode import MODES, SessionMode
from app.sessions.store.backend import NewSession
from app.sessions.store.forks import SessionForks
from app.sessions.store.list_cache import UNCHANGED, Activity, Change, Listed, Removed
from app.sessions.store.rollbacks import SessionRollbacks
from app.sessions.store.rows import check_resumable, find_session, load_session, models, to_record
from app.sessions.store.transcript import Transcript
from app.sessions.store.types import (
    SURFACES,
    RecoveredContext,
    Role,
    SessionRecord,
    Surface,
    TranscriptRow,
    TurnEnd,
    check_choice,
    check_id,
)
from app.sessions.store.units import StoreUnits
from app.sessions.store.usage import TurnUsages, usage_model
from app.storage.database import Database
from app.storage.faults import Faults, StorageFault
from app.storage.models import AcpTurn
from app.storage.types import utcnow

__all__ = [
    "RecoveredContext",
    "Role",
    "SessionLists",
    "SessionRecord",
    "SessionStore",
    "StorageFault",
    "Surface",
    "TranscriptRow",
    "TurnEnd",
]

STOP_KILLED: Final = "killed"


class SessionStore:
    """The sessions' durable records: create, resume, number, close, kill and delete them. Each public method is one
    unit of work on the `Database`: one transaction for a write (a checkpoint). The transcript and the lists are
    its parts `transcript` and `lists`, on the same database and caches."""

    def __init__(self, db: Database, *, faults: Faults | None = None) -> None:
        self._units = StoreUnits(db, faults if faults is not None else Faults())
        self.transcript = Transcript(self._units)
        self.lists = SessionLists(self._units)
        self.usage = TurnUsages(self._units)  # what each turn cost (R-MODEL-5)
        self.forks = SessionForks(self._units)  # session/fork (R-BRANCH-1)
        self.rollbacks = SessionRollbacks(self._units)  # session/rollback (R-BRANCH-2)

    @property
    def faults(self) -> Faults:
        return self._units.faults

    # -- sessions ----------------------------------------------------------------------------------

    async def create(
        self,
        session_id: str,
        *,
        owner: str,
        agent_alias: str,
        workspace_dir: str | PathLike[str],
        mode: SessionMode = SessionMode.DURABLE,
        surface: Surface = "rpc",
        seq_reserved: int = 0,
    ) -> SessionRecord:
        """A new session, or the stored one with that id resumed (`resumed=True`, closed_at cleared). A new one
        is stored with its first `seq_reserved` update numbers reserved (R-MULTI-1).

        Raises SessionKilled (R-ACP-9), SessionClosed (a closed chat session is gone, R-ACP-8) or
        SessionNotOwned (`app.sessions.errors`). A deleted id has no row left, so it starts over empty (R-SES-4).
        """
        for kind, value in (("session_id", session_id), ("owner", owner), ("agent_alias", agent_alias)):
            check_id(kind, value)
        check_choice("mode", mode, MODES)
        check_choice("surface", surface, SURFACES)
        new = NewSession(mode, session_id, owner, agent_alias, str(workspace_dir), surface, seq_reserved)
        return await self._units.write("create", session_id, Listed.of, self._units.backend.create, new)

    async def reopen(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> SessionRecord:
        """Resume a stored session, whoever owns it (the caller checked access): clears closed_at (R-ACP-8)."""

        def unit(s: Session) -> SessionRecord:
            row = load_session(s, mode, session_id)
            check_resumable(row, mode)
            row.closed_at = None
            row.last_activity = utcnow()
            return to_record(row, mode, resumed=True)

        return await self._units.write("reopen", session_id, Listed.of, unit)

    async def reopen_numbered(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE, reserve: int) -> int:
        """`reopen`, and in the same transaction reserve the next `reserve` seqs of its updates (R-MULTI-1);
        returns the stored seq it numbers on from."""

        def unit(s: Session) -> tuple[SessionRecord, int]:
            row = load_session(s, mode, session_id)
            check_resumable(row, mode)
            row.closed_at = None
            row.last_activity = utcnow()
            seq, row.seq = row.seq, row.seq + reserve
            return to_record(row, mode, resumed=True), seq

        _record, seq = await self._units.write("reopen", session_id, lambda done: Listed.of(done[0]), unit)
        return seq

    async def configure(
        self,
        session_id: str,
        *,
        mode: SessionMode = SessionMode.DURABLE,
        agent_alias: str,
        model: str | None,
        temperature: float | None,
    ) -> SessionRecord:
        """Store a session's settings (R-MODEL-4): its agent, and the model and temperature chosen for it (None:
        the agent's own). Its activity time stays as it was."""
        check_id("agent_alias", agent_alias)

        def unit(s: Session) -> SessionRecord:
            row = load_session(s, mode, session_id)
            row.agent_alias, row.model, row.temperature = agent_alias, model, temperature
            return to_record(row, mode)

        return await self._units.write("configure", session_id, Listed.of, unit)

    async def get(self, session_id: str, mode: SessionMode = SessionMode.DURABLE) -> SessionRecord | None:
        check_choice("mode", mode, MODES)
        return await self._units.db.read(self._units.backend.get, mode, session_id)

    async def seq(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> int:
        """The stored `seq` of a session (R-MULTI-1): no update of it was numbered higher; 0 if none."""
        return await self._units.db.read(self._units.backend.seq_of, mode, session_id)

    async def store_seq(
        self, session_id: str, value: int, *, mode: SessionMode = SessionMode.DURABLE, reserved: int | None = None
    ) -> None:
        """Reserve seqs up to `value` (raises the stored one only), or with `reserved` (the reservation the
        session ran under) store the exact last one, unless another reservation was made since."""
        args = (mode, session_id, value, reserved)
        await self._units.write("store_seq", session_id, lambda _: UNCHANGED, self._units.backend.store_seq, *args)

    async def touch(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> None:
        now = utcnow()

        def unit(s: Session) -> None:
            load_session(s, mode, session_id).last_activity = now

        await self._units.write("touch", session_id, lambda _: Activity(mode, now), unit)

    async def close(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> None:
        """Keep the history; an ACP session stays resumable (R-ACP-8). An open turn is left to recovery."""

        now = utcnow()

        def unit(s: Session) -> None:
            row = load_session(s, mode, session_id)
            row.closed_at = row.closed_at or now
            row.last_activity = now

        await self._units.write("close", session_id, lambda _: Activity(mode, now, closed=True), unit)

    async def kill(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> None:
        """Tombstone (R-ACP-9): history stays readable, the session is never rehydrated.

        Open turns end as "killed" and their rows become complete, since nothing will ever recover them.
        """
        transcript = models(mode)[1]
        now = utcnow()

        def unit(s: Session) -> None:
            row = load_session(s, mode, session_id)
            row.killed_at = row.killed_at or now
            row.last_activity = now
            s.execute(
                sa.update(transcript)
                .where(transcript.session_id == session_id, transcript.complete == sa.false())
                .values(complete=True)
            )
            if mode == SessionMode.DURABLE:
                s.execute(
                    sa.update(AcpTurn)
                    .where(AcpTurn.session_id == session_id, AcpTurn.finished_at.is_(None))
                    .values(finished_at=now, stop_reason=STOP_KILLED)
                )

        await self._units.write("kill", session_id, lambda _: Activity(mode, now, killed=True), unit)

    async def delete(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> bool:
        """Remove the session with its transcript, turns and snapshots, in one transaction (R-ACP-10).

        Only this mode's tables are touched: a chat session with the same id survives an ACP delete.
        Returns whether the session existed.
        """
        session_model, transcript, snapshots = models(mode)

        def unit(s: Session) -> bool:
            if find_session(s, mode, session_id) is None:
                return False
            # Children first and explicitly: correct even on a connection without foreign-key enforcement.
            turns: tuple[Any, ...] = (AcpTurn,) if mode == SessionMode.DURABLE else ()
            children: tuple[Any, ...] = (transcript, *turns, snapshots, usage_model(mode))
            for child in children:
                s.execute(sa.delete(child).where(child.session_id == session_id))
            s.execute(sa.delete(session_model).where(session_model.session_id == session_id))
            return True

        return await self._units.write("delete", session_id, partial(_deleted, mode), unit)


class SessionLists:
    """`session/list` pages (R-MULTI-4), from a kept whole list when the writes have kept it exact (`ListCache`),
    else from the index (`SessionStore.lists`)."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def list(self, owner: str | None, *, include_killed: bool = False) -> builtins.list[SessionRecord]:
        """Every session of both modes, most recently active first; `owner=None` lists everyone's. Closed ones
        are listed (their history is kept), killed ones only with `include_killed`."""
        return (await self.page(ListQuery(owner, include_killed), None, None)).records

    async def page(self, query: ListQuery, after: Position | None, limit: int | None) -> Page:
        """The first `limit` sessions of `query` after `after` (None: all), newest activity first (R-MULTI-4):
        from a kept whole list (`store_lists.ListCache`, which the writes keep exact), else from the index."""
        kept = self.kept_page(query, after, limit)
        if kept is not None:
            return kept
        version = self._units.lists.version
        page = await self._units.db.read(self._units.backend.list_page, query, after, limit)
        if after is None and not query.filtered and not page.more:  # the whole list of its key: keep it
            self._units.lists.fill((query.owner, query.include_killed), version, page.records)
        return page

    def kept_page(self, query: ListQuery, after: Position | None, limit: int | None) -> Page | None:
        """What `page` answers, if its whole list is kept in memory (None: `page` has to read)."""
        return self._units.lists.page(query, after, limit)


def _deleted(mode: SessionMode, existed: bool) -> Change:
    return Removed(mode) if existed else UNCHANGED
