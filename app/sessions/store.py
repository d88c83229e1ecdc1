"""The durable session store (R-ACP): sessions, their visible transcript, turns and retained-context snapshots.

Every public write is one committed transaction, i.e. one checkpoint (R-ACP-4): what a method returned is on
disk, and what it raised never happened (the faults of `app.storage.faults` prove it on a real rollback).
Ownership beyond "create refuses another principal's id" is the caller's rule (admins act on any session).
docs/sessions-storage.md has the schema, the checkpoint policy and the recovery algorithm.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from os import PathLike
from typing import Any, Final

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from app.sessions import store_replay
from app.sessions.store_recovery import close_open_turns
from app.sessions.store_rows import (
    add_row,
    check_resumable,
    check_row,
    fetch_rows,
    fetch_sessions,
    find_session,
    load_row,
    load_session,
    models,
    to_record,
    to_transcript_row,
)
from app.sessions.store_types import (
    INTERRUPTED_TEXT,
    MARKER_INTERRUPTED,
    MAX_TURN_ID_LEN,
    SURFACES,
    Mode,
    RecoveredContext,
    Role,
    RowNotFound,
    SessionClosed,
    SessionKilled,
    SessionNotFound,
    SessionOwnerMismatch,
    SessionRecord,
    SessionStoreError,
    Surface,
    TranscriptRow,
    check_choice,
    check_id,
    clip,
)
from app.storage.database import Database
from app.storage.faults import Faults, StorageFault
from app.storage.models import AcpSnapshot, AcpTurn
from app.storage.types import utcnow

__all__ = [
    "Mode",
    "RecoveredContext",
    "Role",
    "RowNotFound",
    "SessionClosed",
    "SessionKilled",
    "SessionNotFound",
    "SessionOwnerMismatch",
    "SessionRecord",
    "SessionStore",
    "SessionStoreError",
    "StorageFault",
    "Surface",
    "TranscriptRow",
]

# Older snapshots are kept only to look at after the fact; the newest one per surface is the one that counts.
SNAPSHOTS_KEPT: Final = 3
STOP_KILLED: Final = "killed"


class SessionStore:
    def __init__(self, db: Database, *, faults: Faults | None = None) -> None:
        self._db = db
        self._faults = faults if faults is not None else Faults()

    @property
    def faults(self) -> Faults:
        return self._faults

    # -- sessions ------------------------------------------------------------------------------------------

    async def create(
        self,
        session_id: str,
        *,
        owner: str,
        agent_alias: str,
        workspace_dir: str | PathLike[str],
        mode: Mode = "acp",
        surface: Surface = "rpc",
    ) -> SessionRecord:
        """A new session, or the stored one with that id resumed (`resumed=True`, closed_at cleared).

        Raises SessionKilled (R-ACP-9), SessionClosed (a closed chat session is gone, R-ACP-8) or
        SessionOwnerMismatch. A deleted id has no row left, so it starts over empty (R-SES-4).
        """
        for kind, value in (("session_id", session_id), ("owner", owner), ("agent_alias", agent_alias)):
            check_id(kind, value)
        check_choice("surface", surface, SURFACES)
        async with self._write("create") as s:
            row = await find_session(s, mode, session_id)
            now = utcnow()
            if row is not None:
                check_resumable(row, mode)
                if row.owner != owner:
                    raise SessionOwnerMismatch(session_id)
                row.closed_at = None
                row.last_activity = now
                return to_record(row, mode, resumed=True)
            row = models(mode)[0](
                session_id=session_id,
                owner=owner,
                agent_alias=agent_alias,
                workspace_dir=str(workspace_dir),
                interaction_surface=surface,
                created_at=now,
                last_activity=now,
                closed_at=None,
                killed_at=None,
                next_index=0,
            )
            s.add(row)
        return to_record(row, mode)

    async def reopen(self, session_id: str, *, mode: Mode = "acp") -> SessionRecord:
        """Resume a stored session, whoever owns it (the caller checked access): clears closed_at (R-ACP-8)."""
        async with self._write("reopen") as s:
            row = await load_session(s, mode, session_id)
            check_resumable(row, mode)
            row.closed_at = None
            row.last_activity = utcnow()
        return to_record(row, mode, resumed=True)

    async def get(self, session_id: str, mode: Mode = "acp") -> SessionRecord | None:
        async with self._db.read() as s:
            row = await find_session(s, mode, session_id)
        return None if row is None else to_record(row, mode)

    async def list(self, owner: str | None, *, include_killed: bool = False) -> builtins.list[SessionRecord]:
        """Sessions of both modes, most recently active first; `owner=None` lists everyone's.

        Closed chat sessions are gone (R-ACP-8) and never listed; closed ACP sessions are resumable and are.
        """
        records: builtins.list[SessionRecord] = []
        async with self._db.read() as s:
            for mode in ("acp", "chat"):
                model = models(mode)[0]
                query = sa.select(model)
                if owner is not None:
                    query = query.where(model.owner == owner)
                if not include_killed:
                    query = query.where(model.killed_at.is_(None))
                if mode == "chat":
                    query = query.where(model.closed_at.is_(None))
                records.extend(to_record(row, mode) for row in await fetch_sessions(s, query))
        records.sort(key=lambda r: (r.last_activity, r.session_id), reverse=True)
        return records

    async def touch(self, session_id: str, *, mode: Mode = "acp") -> None:
        async with self._write("touch") as s:
            (await load_session(s, mode, session_id)).last_activity = utcnow()

    async def close(self, session_id: str, *, mode: Mode = "acp") -> None:
        """Keep the history; an ACP session stays resumable (R-ACP-8). An open turn is left to recovery."""
        async with self._write("close") as s:
            row = await load_session(s, mode, session_id)
            now = utcnow()
            row.closed_at = row.closed_at or now
            row.last_activity = now

    async def kill(self, session_id: str, *, mode: Mode = "acp") -> None:
        """Tombstone (R-ACP-9): history stays readable, the session is never rehydrated.

        Open turns end as "killed" and their rows become complete, since nothing will ever recover them.
        """
        transcript = models(mode)[1]
        async with self._write("kill") as s:
            row = await load_session(s, mode, session_id)
            now = utcnow()
            row.killed_at = row.killed_at or now
            row.last_activity = now
            await s.execute(
                sa.update(transcript)
                .where(transcript.session_id == session_id, transcript.complete.is_(False))
                .values(complete=True)
            )
            if mode == "acp":
                await s.execute(
                    sa.update(AcpTurn)
                    .where(AcpTurn.session_id == session_id, AcpTurn.finished_at.is_(None))
                    .values(finished_at=now, stop_reason=STOP_KILLED)
                )

    async def delete(self, session_id: str, *, mode: Mode = "acp") -> bool:
        """Remove the session with its transcript, turns and snapshots, in one transaction (R-ACP-10).

        Only this mode's tables are touched: a chat session with the same id survives an ACP delete.
        Returns whether the session existed.
        """
        session_model, transcript = models(mode)
        async with self._write("delete") as s:
            if await find_session(s, mode, session_id) is None:
                return False
            # Children first and explicitly: correct even on a connection without foreign-key enforcement.
            children: tuple[Any, ...] = (transcript, AcpTurn, AcpSnapshot) if mode == "acp" else (transcript,)
            for child in children:
                await s.execute(sa.delete(child).where(child.session_id == session_id))
            await s.execute(sa.delete(session_model).where(session_model.session_id == session_id))
        return True

    # -- transcript ----------------------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        *,
        mode: Mode = "acp",
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
        check_row(role, tool_call_id, name, marker)
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_choice("surface", surface, SURFACES)
        async with self._write("append") as s:
            session = await load_session(s, mode, session_id)
            index = add_row(
                s, session, mode, role=role, content=content, tool_call_id=tool_call_id, name=name,
                marker=marker, turn_id=turn_id, surface=surface, complete=complete,
            )  # fmt: skip
            if mode == "acp" and role != "marker" and await s.get(AcpTurn, (session_id, turn_id)) is None:
                s.add(
                    AcpTurn(
                        session_id=session_id,
                        turn_id=turn_id,
                        interaction_surface=surface,
                        first_index=index,
                        started_at=session.last_activity,
                        finished_at=None,
                        stop_reason=None,
                    )
                )
        return index

    async def update_text(
        self, session_id: str, index: int, content: str, *, complete: bool, mode: Mode = "acp"
    ) -> None:
        """Checkpoint the text streamed so far into row `index` (R-ACP-4: called every <= 0.25 s and at tool
        boundaries). The row keeps its index; only content and `complete` change."""
        async with self._write("update_text") as s:
            session = await load_session(s, mode, session_id)
            row = await load_row(s, mode, session_id, index)
            if row.role == "marker":
                raise ValueError("marker rows are written once and never updated")
            row.content = clip(content)
            row.complete = complete
            session.last_activity = utcnow()

    async def finish_turn(self, session_id: str, turn_id: str, stop_reason: str, *, mode: Mode = "acp") -> None:
        """The turn reached a terminal state: its rows are complete and recovery leaves it alone.

        Idempotent; the first stop reason wins (a turn already ended by recovery stays "interrupted").
        """
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_id("stop_reason", stop_reason, 32)
        transcript = models(mode)[1]
        async with self._write("finish_turn") as s:
            session = await load_session(s, mode, session_id)
            now = utcnow()
            session.last_activity = now
            await s.execute(
                sa.update(transcript)
                .where(
                    transcript.session_id == session_id, transcript.turn_id == turn_id, transcript.complete.is_(False)
                )
                .values(complete=True)
            )
            if mode != "acp":
                return
            turn = await s.get(AcpTurn, (session_id, turn_id))
            if turn is None:  # a turn that failed before writing any row still gets its terminal record
                s.add(
                    AcpTurn(
                        session_id=session_id,
                        turn_id=turn_id,
                        interaction_surface=session.interaction_surface,
                        first_index=session.next_index,
                        started_at=now,
                        finished_at=now,
                        stop_reason=stop_reason,
                    )
                )
            elif turn.finished_at is None:
                turn.finished_at = now
                turn.stop_reason = stop_reason

    async def messages(
        self, session_id: str, *, mode: Mode = "acp", limit: int = 100, before: int | None = None
    ) -> tuple[builtins.list[TranscriptRow], int]:
        """The last `limit` rows with index < `before`, ascending, and the total row count (`session/messages`).

        Readable whatever the session's state, killed included (R-ACP-9).
        """
        if limit < 0 or (before is not None and before < 0):
            raise ValueError("limit and before must be >= 0")
        transcript = models(mode)[1]
        async with self._db.read() as s:
            session = await load_session(s, mode, session_id)
            query = sa.select(transcript).where(transcript.session_id == session_id)
            if before is not None:
                query = query.where(transcript.idx < before)
            rows = await fetch_rows(s, query.order_by(transcript.idx.desc()).limit(limit))
        return [to_transcript_row(row) for row in reversed(rows)], session.next_index

    # -- retained context ------------------------------------------------------------------------------------

    async def save_snapshot(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        boundary: int,
        *,
        surface: Surface | None = None,
    ) -> int:
        """Commit a retained-context snapshot and the transcript boundary it covers, together (R-ACP-2).

        `boundary` is the last transcript index the snapshot accounts for (`RecoveredContext.covers` of the
        context it was trimmed from); `surface` defaults to the session's own. Returns the snapshot id. If this
        raises, nothing changed, the previous snapshot still rules and `history_trimmed` must not be sent.
        System prompts and hidden reasoning are dropped before storing (R-ACP-3).
        """
        payload = orjson.dumps(store_replay.sanitize_snapshot(messages)).decode()
        async with self._write("save_snapshot") as s:
            session = await load_session(s, "acp", session_id)
            chosen = surface if surface is not None else session.interaction_surface
            check_choice("surface", chosen, SURFACES)
            if not -1 <= boundary < session.next_index:
                raise ValueError(f"boundary {boundary} is outside the transcript (-1..{session.next_index - 1})")
            latest = await s.scalar(
                sa.select(sa.func.max(AcpSnapshot.snapshot_id)).where(AcpSnapshot.session_id == session_id)
            )
            snapshot_id = (latest or 0) + 1
            s.add(
                AcpSnapshot(
                    session_id=session_id,
                    snapshot_id=snapshot_id,
                    messages=payload,
                    boundary=boundary,
                    interaction_surface=chosen,
                    created_at=utcnow(),
                )
            )
            await s.flush()
            mine = (AcpSnapshot.session_id == session_id, AcpSnapshot.interaction_surface == chosen)
            newest = sa.select(AcpSnapshot.snapshot_id).where(*mine).order_by(AcpSnapshot.snapshot_id.desc())
            await s.execute(
                sa.delete(AcpSnapshot).where(
                    *mine, AcpSnapshot.snapshot_id.not_in(newest.limit(SNAPSHOTS_KEPT).scalar_subquery())
                )
            )
        return snapshot_id

    async def context(self, session_id: str, *, surface: Surface = "rpc", mode: Mode = "acp") -> RecoveredContext:
        """The model context: the latest snapshot of `surface` plus the rows after its boundary (R-ACP-5), or
        the legacy provider-safe replay without one (R-ACP-6). Rows of another surface are ignored (R-ACP-7).

        Raises SessionKilled: a tombstone is never rehydrated (R-ACP-9).
        """
        check_choice("surface", surface, SURFACES)
        transcript = models(mode)[1]
        async with self._db.read() as s:
            session = await load_session(s, mode, session_id)
            check_resumable(session, mode)
            snapshot = None
            if mode == "acp":
                snapshot = await s.scalar(
                    sa.select(AcpSnapshot)
                    .where(AcpSnapshot.session_id == session_id, AcpSnapshot.interaction_surface == surface)
                    .order_by(AcpSnapshot.snapshot_id.desc())
                    .limit(1)
                )
            boundary = -1 if snapshot is None else snapshot.boundary
            query = sa.select(transcript).where(
                transcript.session_id == session_id,
                transcript.idx > boundary,
                transcript.interaction_surface == surface,
            )
            rows = await fetch_rows(s, query.order_by(transcript.idx))
        prefix: builtins.list[dict[str, Any]] | None = None if snapshot is None else orjson.loads(snapshot.messages)
        return RecoveredContext(
            messages=store_replay.rebuild(prefix, (to_transcript_row(row) for row in rows)),
            snapshot_id=None if snapshot is None else snapshot.snapshot_id,
            boundary=boundary,
            replayed_rows=len(rows),
            next_index=session.next_index,
            covers=session.next_index - 1,
        )

    async def recover_interrupted(self, session_id: str, *, surface: Surface = "rpc") -> bool:
        """Repair turns the daemon did not finish (R-ACP-5); True when it appended the interruption marker.

        Only turns and rows of `surface` are considered; others stay as checkpointed (R-ACP-7). Their rows keep
        the text they had and become complete, the turns end as "interrupted", and ONE marker row follows.
        A second call finds nothing open and adds nothing. Call it only while no live turn runs.
        """
        check_choice("surface", surface, SURFACES)
        async with self._write("recover") as s:
            session = await load_session(s, "acp", session_id)
            check_resumable(session, "acp")
            marker_turn = await close_open_turns(s, session_id, surface)
            if marker_turn is None:
                return False
            add_row(
                s, session, "acp", role="marker", content=INTERRUPTED_TEXT, tool_call_id=None, name=None,
                marker=MARKER_INTERRUPTED, turn_id=marker_turn, surface=surface, complete=True,
            )  # fmt: skip
        return True

    # -- plumbing --------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def _write(self, point: str) -> AsyncIterator[AsyncSession]:
        """One committed transaction; an armed fault fires after the writes are issued, before the commit."""
        async with self._db.write() as s:
            yield s
            await s.flush()
            self._faults.check(point)
