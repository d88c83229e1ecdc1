"""`CoreBackend`: the session store's units of work in SQLAlchemy Core, over the statements of
`app.sessions.store.statements`, on every database.

`session/list`, `session/messages`, `session/new` and the checkpoints of a turn (`append`, `update_text`,
`finish_turn`, `context`) run here: each is one plain method over the unit's `Session`, issuing prebuilt Core
statements on its connection. Building a statement costs more than executing it on SQLite, and ORM loading
costs several times a Core row; both showed up as most of a request (docs/sessions-storage.md, "The runner").
On SQLite the hottest of them run as SQL text instead (`app.sessions.store.sqlite_backend`), returning exactly what
these return. The rarer writes (close, kill, delete, recovery) stay ORM in `app.sessions.store.session_store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from sqlalchemy import CursorResult
from sqlalchemy.orm import Session

from app.sessions.errors import RowNotFound, SessionClosed, SessionKilled, SessionNotFound, SessionNotOwned
from app.sessions.list_pages import ListQuery, Page, Position
from app.sessions.mode import SessionMode
from app.sessions.store import statements as q
from app.sessions.store.backend import ContextRows, NewRow, NewSession, NewSnapshot, TextCheckpoint, TurnEnding
from app.sessions.store.rows import record_from_columns
from app.sessions.store.types import SURFACES, SessionRecord, Surface, TranscriptRow, TurnEnd, check_choice, clip
from app.storage.types import utcnow

__all__ = ["CoreBackend"]


class CoreBackend:
    """`StoreBackend` in SQLAlchemy Core: statements built once per mode and shape, executed on the unit's
    connection; ORM loading is left to the rarer writes of `SessionStore`."""

    def get(self, s: Session, mode: SessionMode, session_id: str) -> SessionRecord | None:
        row = s.connection().execute(q.get(mode), {"sid": session_id}).first()
        return None if row is None else record_from_columns(row, mode)

    def seq_of(self, s: Session, mode: SessionMode, session_id: str) -> int:
        value = s.connection().execute(q.seq(mode), {"sid": session_id}).scalar()
        return 0 if value is None else int(value)

    def store_seq(self, s: Session, mode: SessionMode, session_id: str, value: int, reserved: int | None) -> None:
        params = {"sid": session_id, "value": value, "reserved": reserved}
        s.connection().execute(q.store_seq(mode, reserved is not None), params)

    def list_page(self, s: Session, query: ListQuery, after: Position | None, limit: int | None) -> Page:
        """The first `limit` sessions (None: all) of `query` after `after`, newest activity first (R-MULTI-4)."""
        connection = s.connection()
        dialect = connection.dialect.name
        fold = query.fold
        params = {
            "owner": query.owner,
            "pattern": None if fold is None else "%" + q.LIKE_SPECIAL.sub(r"\\\g<0>", fold) + "%",
            "at": None if after is None else after.last_activity,
            "after_sid": None if after is None else after.session_id,
            "limit": None if limit is None else limit + 1,
        }
        parts = [
            [
                record_from_columns(row, mode)
                for row in connection.execute(
                    q.page(mode, query.owner is not None, query.include_killed, fold is not None,
                          q.after_op(mode, after), limit is not None, dialect),
                    params,
                )
            ]
            for mode in q.page_modes(query)
        ]  # fmt: skip
        return q.merge_page(parts, limit)

    def create(self, s: Session, new: NewSession) -> SessionRecord:
        mode, session_id, owner, workspace, surface = (
            new.mode,
            new.session_id,
            new.owner,
            new.workspace_dir,
            new.surface,
        )
        agent_alias, seq_reserved = new.agent_alias, new.seq_reserved
        connection = s.connection()
        now = utcnow()
        row = connection.execute(q.get(mode), {"sid": session_id}).first()
        if row is not None:
            record = record_from_columns(row, mode)
            if record.killed:
                raise SessionKilled(session_id=session_id, mode=mode)
            if mode == SessionMode.CHAT and record.closed:
                raise SessionClosed(session_id=session_id)
            if record.owner != owner:
                raise SessionNotOwned(session_id=session_id)
            connection.execute(q.resume(mode), {"sid": session_id, "now": now})
            return replace(record, closed=False, last_activity=now, resumed=True)
        values = {
            "session_id": session_id,
            "owner": owner,
            "agent_alias": agent_alias,
            "workspace_dir": workspace,
            "interaction_surface": surface,
            "created_at": now,
            "last_activity": now,
            "closed_at": None,
            "killed_at": None,
            "next_index": 0,
        }
        if seq_reserved:  # else the column's default, 0
            values["seq"] = seq_reserved
        connection.execute(q.insert_session(mode), values)
        return SessionRecord(
            session_id=session_id,
            owner=owner,
            agent_alias=agent_alias,
            mode=mode,
            workspace_dir=workspace,
            surface=surface,
            created_at=now,
            last_activity=now,
            killed=False,
            closed=False,
            message_count=0,
        )

    def messages(
        self, s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int]:
        connection = s.connection()
        total = connection.execute(q.total(mode), {"sid": session_id}).scalar()
        if total is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        if not limit:
            return [], total
        query = q.messages(mode, before is not None)
        rows = [
            TranscriptRow(*row)
            for row in connection.execute(query, {"sid": session_id, "before": before, "limit": limit})
        ]
        rows.reverse()
        return rows, total

    def messages_and_turn_ends(
        self, s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int, list[TurnEnd]]:
        """The page `messages` reads, and in the same transaction the end of each ended turn whose last row is in
        it, ascending by index (`session/messages` with `turnEnds`). Chat sessions record no turns: none."""
        rows, total = self.messages(s, mode, session_id, limit, before)
        if not rows or mode != SessionMode.DURABLE:
            return rows, total, []
        params = {"sid": session_id, "first": rows[0].index, "last": rows[-1].index}
        ends = [TurnEnd(index, str(reason)) for index, reason in s.connection().execute(q.TURN_ENDS, params)]
        return rows, total, ends

    def append(self, s: Session, row: NewRow) -> int:
        """One transcript row at the session's next index (R-ACP-1), stamped `now` (the session's activity time too);
        the first non-marker row of an ACP turn opens its `acp_turns` record; `title` titles an untitled session. The
        counter is bumped and the row written in the writer's one transaction."""
        mode, session_id, turn_id, surface, now, title = (
            row.mode,
            row.session_id,
            row.turn_id,
            row.surface,
            row.at,
            row.title,
        )
        connection = s.connection()
        fold = None if title is None else title.casefold()
        taken = {"sid": session_id, "now": now, "title": title, "fold": fold}
        counter = connection.execute(q.take_index(mode), taken).scalar()
        if counter is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        index: int = counter - 1
        values = {
            "session_id": session_id,
            "idx": index,
            "role": row.role,
            "content": clip(row.content),
            "tool_call_id": row.tool_call_id,
            "name": row.name,
            "marker": row.marker,
            "turn_id": turn_id,
            "interaction_surface": surface,
            "complete": row.complete,
            "created_at": now,
        }
        connection.execute(q.insert_row(mode), values)
        opens_turn = mode == SessionMode.DURABLE and row.role != "marker"
        if opens_turn and connection.execute(q.TURN_STATE, {"sid": session_id, "turn": turn_id}).first() is None:
            turn = {
                "session_id": session_id,
                "turn_id": turn_id,
                "interaction_surface": surface,
                "first_index": index,
                "started_at": now,
                "finished_at": None,
                "stop_reason": None,
            }
            connection.execute(q.INSERT_TURN, turn)
        return index

    def update_text(self, s: Session, checkpoint: TextCheckpoint) -> None:
        mode, session_id, index, now = checkpoint.mode, checkpoint.session_id, checkpoint.index, checkpoint.at
        connection = s.connection()
        if connection.execute(q.touch(mode), {"sid": session_id, "now": now}).first() is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        params = {"sid": session_id, "index": index, "text": clip(checkpoint.content), "done": checkpoint.complete}
        if cast("CursorResult[Any]", connection.execute(q.set_text(mode), params)).rowcount == 1:
            return
        # Nothing updated: say why (the row does not exist, or it is a marker, which is written once).
        if connection.execute(q.row_role(mode), {"sid": session_id, "index": index}).scalar() is None:
            raise RowNotFound(session_id, index)
        raise ValueError("marker rows are written once and never updated")

    def finish_turn(self, s: Session, ending: TurnEnding) -> None:
        mode, session_id, turn_id, stop_reason, now = (
            ending.mode,
            ending.session_id,
            ending.turn_id,
            ending.stop_reason,
            ending.at,
        )
        connection = s.connection()
        session = connection.execute(q.touch(mode), {"sid": session_id, "now": now}).first()
        if session is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        connection.execute(q.complete_turn_rows(mode), {"sid": session_id, "turn": turn_id})
        if mode != SessionMode.DURABLE:
            return
        ended = {"sid": session_id, "turn": turn_id, "now": now, "reason": stop_reason}
        if cast("CursorResult[Any]", connection.execute(q.END_TURN, ended)).rowcount == 1:
            return
        # Already ended (the first stop reason wins), or never opened:
        if connection.execute(q.TURN_STATE, {"sid": session_id, "turn": turn_id}).first() is None:
            # a turn that failed before writing any row still gets its terminal record
            surface, next_index = session
            turn = {
                "session_id": session_id,
                "turn_id": turn_id,
                "interaction_surface": surface,
                "first_index": next_index,
                "started_at": now,
                "finished_at": now,
                "stop_reason": stop_reason,
            }
            connection.execute(q.INSERT_TURN, turn)

    def context_rows(self, s: Session, mode: SessionMode, session_id: str, surface: Surface) -> ContextRows:
        """What `SessionStore.context` rebuilds from: the latest snapshot of `surface`, and the rows after it."""
        connection = s.connection()
        state = connection.execute(q.state(mode), {"sid": session_id}).first()
        if state is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        killed, closed, next_index = state
        if killed:
            raise SessionKilled(session_id=session_id, mode=mode)
        if mode == SessionMode.CHAT and closed:
            raise SessionClosed(session_id=session_id)
        found = connection.execute(q.snapshot(mode), {"sid": session_id, "surface": surface}).first()
        snapshot = None if found is None else (found[0], found[1], found[2])
        boundary = -1 if snapshot is None else snapshot[1]
        params = {"sid": session_id, "boundary": boundary, "surface": surface}
        rows: Sequence[Any] = connection.execute(q.context_rows(mode), params).all()
        return snapshot, next_index, list(rows)

    def save_snapshot(self, s: Session, snapshot: NewSnapshot) -> tuple[int, Surface]:
        """A snapshot and its boundary, then only the newest `keep` of its surface are kept (R-ACP-2); returns its id
        and surface."""
        mode, session_id, surface, boundary = snapshot.mode, snapshot.session_id, snapshot.surface, snapshot.boundary
        connection = s.connection()
        state = connection.execute(q.snapshot_state(mode), {"sid": session_id}).first()
        if state is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        own_surface, next_index = state
        chosen = cast(Surface, surface if surface is not None else own_surface)  # checked next
        check_choice("surface", chosen, SURFACES)
        if not -1 <= boundary < next_index:
            raise ValueError(f"boundary {boundary} is outside the transcript (-1..{next_index - 1})")
        snapshot_id: int = (connection.execute(q.latest_snapshot(mode), {"sid": session_id}).scalar() or 0) + 1
        row = {
            "session_id": session_id,
            "snapshot_id": snapshot_id,
            "messages": snapshot.payload,
            "boundary": boundary,
            "interaction_surface": chosen,
            "created_at": utcnow(),
        }
        connection.execute(q.insert_snapshot(mode), row)
        connection.execute(q.prune_snapshots(mode), {"sid": session_id, "surface": chosen, "keep": snapshot.keep})
        return snapshot_id, chosen
