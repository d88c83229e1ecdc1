"""The durable session store (R-ACP): sessions, their visible transcript, turns and retained-context snapshots.

Every public write is one committed transaction, i.e. one checkpoint (R-ACP-4): what a method returned is on
disk, and what it raised never happened (the faults of `app.storage.faults` prove it on a real rollback).
Ownership beyond "create refuses another principal's id" is the caller's rule (admins act on any session).
docs/sessions-storage.md has the schema, the checkpoint policy and the recovery algorithm.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from os import PathLike
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

import orjson
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.list_pages import ListQuery, Page, Position
from app.sessions.mode import MODES, SessionMode
from app.sessions.store import replay
from app.sessions.store.backend import NewRow, NewSession, NewSnapshot, StoreBackend, TextCheckpoint, TurnEnding
from app.sessions.store.context_cache import ContextCache, ReplayRow
from app.sessions.store.core_backend import CoreBackend
from app.sessions.store.list_cache import UNCHANGED, Activity, Change, ListCache, Listed, Removed
from app.sessions.store.recovery import close_open_turns
from app.sessions.store.rows import (
    add_row,
    check_resumable,
    check_row,
    find_session,
    load_session,
    models,
    to_record,
)
from app.sessions.store.sqlite_backend import SqliteBackend
from app.sessions.store.types import (
    INTERRUPTED_TEXT,
    MARKER_INTERRUPTED,
    MAX_TURN_ID_LEN,
    SURFACES,
    RecoveredContext,
    Role,
    SessionRecord,
    Surface,
    TranscriptRow,
    TurnEnd,
    check_choice,
    check_id,
    clip,
    title_of,
)
from app.storage.database import Database
from app.storage.faults import Faults, StorageFault
from app.storage.models import AcpTurn
from app.storage.types import utcnow

__all__ = [
    "RecoveredContext",
    "Role",
    "SessionMode",
    "SessionRecord",
    "SessionStore",
    "StorageFault",
    "Surface",
    "TranscriptRow",
    "TurnEnd",
]

# Older snapshots are kept for inspection only; the newest one per surface counts.
SNAPSHOTS_KEPT: Final = 3
STOP_KILLED: Final = "killed"

# Writes that leave a cached context exact (`append`, `update_text`, `save_snapshot` update it).
_KEEPS_CONTEXT: Final = frozenset({"append", "update_text", "finish_turn", "save_snapshot", "store_seq"})

P = ParamSpec("P")
T = TypeVar("T")


class SessionStore:
    """Each public method is one unit of work on the `Database`: one transaction for a write (a checkpoint)."""

    def __init__(self, db: Database, *, faults: Faults | None = None) -> None:
        self._db = db
        self._faults = faults if faults is not None else Faults()
        self._contexts = ContextCache()
        self._lists = ListCache()
        self._endings: set[asyncio.Future[None]] = set()  # cancelled writes not yet known to have ended
        self._backend = backend_for(db.dialect)

    @property
    def faults(self) -> Faults:
        return self._faults

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
        return await self._write("create", session_id, Listed.of, self._backend.create, new)

    async def reopen(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> SessionRecord:
        """Resume a stored session, whoever owns it (the caller checked access): clears closed_at (R-ACP-8)."""

        def unit(s: Session) -> SessionRecord:
            row = load_session(s, mode, session_id)
            check_resumable(row, mode)
            row.closed_at = None
            row.last_activity = utcnow()
            return to_record(row, mode, resumed=True)

        return await self._write("reopen", session_id, Listed.of, unit)

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

        _record, seq = await self._write("reopen", session_id, lambda done: Listed.of(done[0]), unit)
        return seq

    async def get(self, session_id: str, mode: SessionMode = SessionMode.DURABLE) -> SessionRecord | None:
        check_choice("mode", mode, MODES)
        return await self._db.read(self._backend.get, mode, session_id)

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
        version = self._lists.version
        page = await self._db.read(self._backend.list_page, query, after, limit)
        if after is None and not query.filtered and not page.more:  # the whole list of its key: keep it
            self._lists.fill((query.owner, query.include_killed), version, page.records)
        return page

    def kept_page(self, query: ListQuery, after: Position | None, limit: int | None) -> Page | None:
        """What `page` answers, if its whole list is kept in memory (None: `page` has to read)."""
        return self._lists.page(query, after, limit)

    async def seq(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> int:
        """The stored `seq` of a session (R-MULTI-1): no update of it was numbered higher; 0 if none."""
        return await self._db.read(self._backend.seq_of, mode, session_id)

    async def store_seq(
        self, session_id: str, value: int, *, mode: SessionMode = SessionMode.DURABLE, reserved: int | None = None
    ) -> None:
        """Reserve seqs up to `value` (raises the stored one only), or with `reserved` (the reservation the
        session ran under) store the exact last one, unless another reservation was made since."""
        args = (mode, session_id, value, reserved)
        await self._write("store_seq", session_id, lambda _: UNCHANGED, self._backend.store_seq, *args)

    async def touch(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> None:
        now = utcnow()

        def unit(s: Session) -> None:
            load_session(s, mode, session_id).last_activity = now

        await self._write("touch", session_id, lambda _: Activity(mode, now), unit)

    async def close(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> None:
        """Keep the history; an ACP session stays resumable (R-ACP-8). An open turn is left to recovery."""

        now = utcnow()

        def unit(s: Session) -> None:
            row = load_session(s, mode, session_id)
            row.closed_at = row.closed_at or now
            row.last_activity = now

        await self._write("close", session_id, lambda _: Activity(mode, now, closed=True), unit)

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

        await self._write("kill", session_id, lambda _: Activity(mode, now, killed=True), unit)

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
            children: tuple[Any, ...] = (transcript, *turns, snapshots)
            for child in children:
                s.execute(sa.delete(child).where(child.session_id == session_id))
            s.execute(sa.delete(session_model).where(session_model.session_id == session_id))
            return True

        return await self._write("delete", session_id, partial(_deleted, mode), unit)

    # -- transcript --------------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        *,
        mode: SessionMode = SessionMode.DURABLE,
        role: Role,
        content: str,
        tool_call_id: str | None = None,
        name: str | None = None,
        marker: str | None = None,
        turn_id: str,
        surface: Surface,
        complete: bool = True,
    ) -> int:
        """Commit one transcript row now (R-ACP-4) and return its index; content over 64 KiB is clipped (R-ACP-5).

        The first non-marker row of a turn id opens that turn; `finish_turn` ends it. A turn left open is what
        `recover_interrupted` repairs.
        """
        check_choice("mode", mode, MODES)
        check_row(role, tool_call_id, name, marker)
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_choice("surface", surface, SURFACES)
        content = clip(content)
        now = utcnow()
        title = title_of(content) if role == "user" else None  # set only on a session that has none
        row = NewRow(
            mode, session_id, role, content, tool_call_id, name, marker, turn_id, surface, complete, now, title
        )
        index: int = await self._write(
            "append", session_id, partial(_appended, mode, now, title), self._backend.append, row
        )
        self._contexts.appended(session_id, mode, surface, ReplayRow(index, role, content, tool_call_id, name))
        return index

    async def update_text(
        self, session_id: str, index: int, content: str, *, complete: bool, mode: SessionMode = SessionMode.DURABLE
    ) -> None:
        """Checkpoint the text streamed so far into row `index` (R-ACP-4: called every <= 0.25 s and at tool
        boundaries). The row keeps its index; only content and `complete` change."""
        check_choice("mode", mode, MODES)
        content = clip(content)
        now = utcnow()
        checkpoint, activity = TextCheckpoint(mode, session_id, index, content, complete, now), Activity(mode, now)
        await self._write("update_text", session_id, lambda _: activity, self._backend.update_text, checkpoint)
        self._contexts.updated(session_id, mode, index, content)

    async def finish_turn(
        self, session_id: str, turn_id: str, stop_reason: str, *, mode: SessionMode = SessionMode.DURABLE
    ) -> None:
        """The turn reached a terminal state: its rows are complete and recovery leaves it alone.

        Idempotent; the first stop reason wins (a turn already ended by recovery stays "interrupted").
        """
        check_choice("mode", mode, MODES)
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_id("stop_reason", stop_reason, 32)
        now = utcnow()
        ending, activity = TurnEnding(mode, session_id, turn_id, stop_reason, now), Activity(mode, now)
        await self._write("finish_turn", session_id, lambda _: activity, self._backend.finish_turn, ending)

    async def messages(
        self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE, limit: int = 100, before: int | None = None
    ) -> tuple[builtins.list[TranscriptRow], int]:
        """The last `limit` rows with index < `before`, ascending, and the total row count (`session/messages`).

        Readable whatever the session's state, killed included (R-ACP-9).
        """
        if limit < 0 or (before is not None and before < 0):
            raise ValueError("limit and before must be >= 0")
        check_choice("mode", mode, MODES)
        return await self._db.read(self._backend.messages, mode, session_id, limit, before)

    async def messages_and_turn_ends(
        self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE, limit: int = 100, before: int | None = None
    ) -> tuple[builtins.list[TranscriptRow], int, builtins.list[TurnEnd]]:
        """`messages`, plus how each turn whose last row is in that page ended: its last row's index and its stop
        reason, ascending (`session/messages` with `turnEnds`, issue 29 §4.9). One more query, in the same read.

        Turns still running are not listed; chat sessions record no turns, so theirs is always empty.
        """
        if limit < 0 or (before is not None and before < 0):
            raise ValueError("limit and before must be >= 0")
        check_choice("mode", mode, MODES)
        unit = self._backend.messages_and_turn_ends
        return await self._db.read(unit, mode, session_id, limit, before)

    # -- retained context --------------------------------------------------------------------------

    async def save_snapshot(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        boundary: int,
        *,
        surface: Surface | None = None,
        mode: SessionMode = SessionMode.DURABLE,
    ) -> int:
        """Commit a retained-context snapshot and the transcript boundary it covers, together (R-ACP-2); a chat
        session's goes to its own table (R-MULTI-5).

        `boundary` is the last transcript index the snapshot accounts for (`RecoveredContext.covers` of the
        context it was trimmed from); `surface` defaults to the session's own. Returns the snapshot id. If this
        raises, nothing changed, the previous snapshot still rules and `history_trimmed` must not be sent.
        System prompts and hidden reasoning are dropped before storing (R-ACP-3).
        """
        payload = orjson.dumps(replay.sanitize_snapshot(messages)).decode()
        if surface is not None:
            check_choice("surface", surface, SURFACES)
        check_choice("mode", mode, MODES)
        snapshot = NewSnapshot(mode, session_id, payload, boundary, surface, SNAPSHOTS_KEPT)
        unit = self._backend.save_snapshot
        snapshot_id, chosen = await self._write("save_snapshot", session_id, lambda _: UNCHANGED, unit, snapshot)
        self._contexts.snapshot_saved(session_id, mode, chosen, (snapshot_id, boundary, payload))
        return snapshot_id

    async def context(
        self, session_id: str, *, surface: Surface = "rpc", mode: SessionMode = SessionMode.DURABLE
    ) -> RecoveredContext:
        """The model context: the latest snapshot of `surface` plus the rows after its boundary (R-ACP-5), or
        the legacy provider-safe replay without one (R-ACP-6). Rows of another surface are ignored (R-ACP-7).

        Raises SessionKilled: a tombstone is never rehydrated (R-ACP-9).
        """
        check_choice("surface", surface, SURFACES)
        check_choice("mode", mode, MODES)
        key = (session_id, mode, surface)
        entry = self._contexts.get(key)
        if entry is None:
            version = self._contexts.version(session_id)
            snapshot, next_index, rows = await self._db.read(self._backend.context_rows, mode, session_id, surface)
            entry = self._contexts.fill(key, version, snapshot, next_index, rows)
        snapshot = entry.snapshot
        if entry.messages is None:
            if snapshot is not None and entry.prefix is None:
                entry.prefix = orjson.loads(snapshot[2])
            entry.messages = replay.rebuild(entry.prefix, entry.rows)
        return RecoveredContext(
            messages=list(entry.messages),
            snapshot_id=None if snapshot is None else snapshot[0],
            boundary=-1 if snapshot is None else snapshot[1],
            replayed_rows=len(entry.rows),
            next_index=entry.next_index,
            covers=entry.next_index - 1,
        )

    async def recover_interrupted(self, session_id: str, *, surface: Surface = "rpc") -> bool:
        """Repair turns the daemon did not finish (R-ACP-5); True when it appended the interruption marker.

        Only turns and rows of `surface` are considered; others stay as checkpointed (R-ACP-7). Their rows keep
        the text they had and become complete, the turns end as "interrupted", and ONE marker row follows.
        A second call finds nothing open and adds nothing. Call it only while no live turn runs.
        """
        check_choice("surface", surface, SURFACES)

        def unit(s: Session) -> bool:
            session = load_session(s, SessionMode.DURABLE, session_id)
            check_resumable(session, SessionMode.DURABLE)
            marker_turn = close_open_turns(s, session_id, surface)
            if marker_turn is None:
                return False
            add_row(
                s, session, SessionMode.DURABLE, role="marker", content=INTERRUPTED_TEXT, tool_call_id=None, name=None,
                marker=MARKER_INTERRUPTED, turn_id=marker_turn, surface=surface, complete=True,
            )  # fmt: skip
            return True

        return await self._write("recover", session_id, None, unit)

    # -- plumbing ----------------------------------------------------------------------------------

    async def _write(
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
        contexts, lists = self._contexts, self._lists
        contexts.writing(session_id)
        ticket = lists.write_begins(session_id)
        try:
            result = await self._db.write(self._checked, point, partial(unit, **kwargs), *args)
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
            await self._db.write(_nothing)
        self._ended_unknown(session_id, ticket)

    def _ended_unknown(self, session_id: str, ticket: int) -> None:
        self._contexts.writing(session_id)
        self._contexts.drop(session_id)
        self._lists.write_ends(session_id, ticket)

    def _checked(self, s: Session, point: str, unit: Callable[..., T], *args: Any) -> T:
        result = unit(s, *args)
        s.flush()
        self._faults.check(point)
        return result


# The backend of each SQL dialect (`StoreBackend`); any other dialect runs on SQLAlchemy Core.
_BACKENDS: Final[dict[str, type[CoreBackend]]] = {"sqlite": SqliteBackend}


def backend_for(dialect: str) -> StoreBackend:
    """The units of work for a database of this SQL dialect."""
    return _BACKENDS.get(dialect, CoreBackend)()


def _appended(mode: SessionMode, now: datetime, title: str | None, index: int) -> Activity:
    return Activity(mode, now, message_count=index + 1, title=title)


def _deleted(mode: SessionMode, existed: bool) -> Change:
    return Removed(mode) if existed else UNCHANGED


def _nothing(_s: Session) -> None:
    """A write that changes nothing: queued behind another, it tells when that one has finished."""
