"""The session store's hottest units on SQLite, as SQL text on the unit's own `sqlite3` connection.

`CoreBackend` builds each statement once in SQLAlchemy Core; executing a Core statement still costs ~25 µs on top of
the ~5 µs SQLite spends on it, which was most of a `session/list`, a `session/messages` and a turn's checkpoints
(docs/sessions-storage.md, "The runner"). Here the same statements are SQL text, which sqlite3 prepares once per
connection and caches by its text. Each unit returns or changes exactly what its `CoreBackend` twin does;
tests/unit/sessions/test_store_backends.py runs both on one database and compares them value by value.

Storage formats are SQLAlchemy's for SQLite: DATETIME is naive UTC as ISO text ("2026-12-01 16:33:36.123456",
`sqlite_time`), BOOLEAN is 0/1. The unit still runs in the runner's `Session` transaction, so the commit, the
rollback and the begin hooks (`app.storage.driver_faults`) are the same as for every other unit.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final, cast

from sqlalchemy.orm import Session

from app.sessions.errors import RowNotFound, SessionNotFound
from app.sessions.list_pages import ListQuery, Page, Position
from app.sessions.mode import SessionMode
from app.sessions.store.backend import NewRow, TextCheckpoint, TurnEnding
from app.sessions.store.core_backend import CoreBackend
from app.sessions.store.statements import after_op, merge_page, page_modes
from app.sessions.store.types import SessionRecord, TranscriptRow, clip

__all__ = ["SqliteBackend", "sqlite_time"]


def _for_both_modes(acp: str) -> dict[SessionMode, str]:
    """A statement written for the ACP tables, and the same on the chat tables (the same columns, R-ACP-10)."""
    chat = acp.replace("acp_sessions", "chat_sessions").replace("acp_transcript", "chat_messages")
    return {SessionMode.DURABLE: acp, SessionMode.CHAT: chat}


def sqlite_time(moment: datetime) -> str:
    """An aware time as SQLAlchemy's SQLite DATETIME stores it (naive UTC, always six fraction digits)."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


@lru_cache(maxsize=4096)  # thread-safe; the reader threads share it
def _utc(value: str) -> datetime:
    """A stored DATETIME (naive UTC text) as aware UTC: what `as_utc(datetime.fromisoformat(value))` gives.

    `fromisoformat` with "+00:00" (it returns the `UTC` singleton) costs a sixth of `replace(tzinfo=UTC)`; and
    `session/list` reads the same times on every call, so parses are remembered, which also hands `iso_z` the
    same objects again, whose renderings it remembers.
    """
    return datetime.fromisoformat(value + "+00:00")


def _connection(s: Session) -> sqlite3.Connection:
    # `s.connection()` begins the unit's transaction (its "begin" hooks run); the statements then go
    # straight to the sqlite3 connection under it.
    return cast(sqlite3.Connection, s.connection().connection.driver_connection)


# -- reads: `session/list` and `session/messages` --------------------------------------------------

_RECORD = (
    "SELECT session_id, owner, agent_alias, workspace_dir, interaction_surface, created_at, last_activity, "
    "killed_at, closed_at, next_index, title, model, temperature, parent_id, forked_at FROM "
)


@lru_cache(maxsize=128)
def _page_sql(
    mode: SessionMode, by_owner: bool, include_killed: bool, by_title: bool, after: str, limited: bool
) -> str:
    """`statements.page` as SQL text (the same conditions, so the same index walk)."""
    conditions = [
        *(["owner = :owner"] if by_owner else []),
        *([] if include_killed else ["killed_at IS NULL"]),
        *(["instr(title_fold, :fold) > 0"] if by_title else []),
        *([f"last_activity <= :at AND (last_activity < :at OR session_id {after} :sid)"] if after else []),
    ]
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    table = "acp_sessions" if mode == SessionMode.DURABLE else "chat_sessions"
    limit = " LIMIT :limit" if limited else ""
    return f"{_RECORD}{table}{where} ORDER BY last_activity DESC, session_id DESC{limit}"


_TOTAL_SQL: Final = _for_both_modes("SELECT next_index FROM acp_sessions WHERE session_id = ?")
_ROW = "SELECT idx, role, content, tool_call_id, name, marker, turn_id, interaction_surface, complete, created_at FROM "
# (mode, `before` given) -> statement
_MESSAGES_SQL: Final = {
    (mode, bounded): sql
    for bounded, acp in (
        # R-BRANCH-2: rolled-back rows are hidden (`SessionRollbacks.messages` shows them)
        (False, _ROW + "acp_transcript WHERE session_id = :sid AND rolled_back = 0 ORDER BY idx DESC LIMIT :limit"),
        (
            True,
            _ROW + "acp_transcript WHERE session_id = :sid AND idx < :before AND rolled_back = 0 "
            "ORDER BY idx DESC LIMIT :limit",
        ),
    )
    for mode, sql in _for_both_modes(acp).items()
}


# -- writes: a turn's checkpoints ------------------------------------------------------------------

_TAKE_INDEX: Final = _for_both_modes(
    "UPDATE acp_sessions SET next_index = next_index + 1, last_activity = ?, title = coalesce(title, ?), "
    "title_fold = coalesce(title_fold, ?) WHERE session_id = ? RETURNING next_index"
)
_TOUCH: Final = _for_both_modes(
    "UPDATE acp_sessions SET last_activity = ? WHERE session_id = ? RETURNING interaction_surface, next_index"
)
_INSERT_ROW: Final = _for_both_modes(
    "INSERT INTO acp_transcript (session_id, idx, role, content, tool_call_id, name, marker, turn_id, "
    "interaction_surface, complete, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SET_TEXT: Final = _for_both_modes(
    "UPDATE acp_transcript SET content = ?, complete = ? WHERE session_id = ? AND idx = ? AND role != 'marker'"
)
_ROW_EXISTS: Final = _for_both_modes("SELECT 1 FROM acp_transcript WHERE session_id = ? AND idx = ?")
# Worded as the partial index ix_*_open states it (migration 0004): only open rows are visited.
_COMPLETE_TURN_ROWS: Final = _for_both_modes(
    "UPDATE acp_transcript SET complete = 1 WHERE session_id = ? AND turn_id = ? AND complete = 0"
)
# A turn's first row opens it; its later rows find it open (keyed by (session, turn)).
_OPEN_TURN: Final = (
    "INSERT INTO acp_turns (session_id, turn_id, interaction_surface, first_index, started_at, finished_at, "
    "stop_reason) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn_id) DO NOTHING"
)
_END_TURN: Final = (
    "UPDATE acp_turns SET finished_at = ?, stop_reason = ? WHERE session_id = ? AND turn_id = ? AND finished_at IS NULL"
)


class SqliteBackend(CoreBackend):
    """`StoreBackend` on SQLite: `CoreBackend`, with the reads behind `session/list` and `session/messages` and the
    writes of a turn's checkpoints as SQL text on the driver connection."""

    def list_page(self, s: Session, query: ListQuery, after: Position | None, limit: int | None) -> Page:
        """`CoreBackend.list_page` on SQLite."""
        connection = _connection(s)
        fold = query.fold
        params = {
            "owner": query.owner,
            "fold": fold,
            "at": None if after is None else sqlite_time(after.last_activity),
            "sid": None if after is None else after.session_id,
            "limit": None if limit is None else limit + 1,
        }
        flags = (query.owner is not None, query.include_killed, fold is not None)
        parts = [
            [
                SessionRecord(
                    sid, who, alias, mode, workspace, surface, _utc(created), _utc(last),
                    killed is not None, closed is not None, count, title, False, model, heat, parent, forked,
                )
                for (sid, who, alias, workspace, surface, created, last, killed, closed, count, title, model, heat,
                     parent, forked) in (
                    connection.execute(_page_sql(mode, *flags, after_op(mode, after), limit is not None), params)
                )
            ]
            for mode in page_modes(query)
        ]  # fmt: skip
        return merge_page(parts, limit)

    def messages(
        self, s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int]:
        """`CoreBackend.messages` on SQLite."""
        connection = _connection(s)
        found = connection.execute(_TOTAL_SQL[mode], (session_id,)).fetchone()
        if found is None:
            raise SessionNotFound(session_id=session_id, mode=mode)
        total: int = found[0]
        if not limit:
            return [], total
        params = {"sid": session_id, "before": before, "limit": limit}
        rows = [
            TranscriptRow(index, role, content, call, name, marker, turn, surface, bool(complete), _utc(created))
            for index, role, content, call, name, marker, turn, surface, complete, created in connection.execute(
                _MESSAGES_SQL[mode, before is not None], params
            )
        ]
        rows.reverse()
        return rows, total

    def append(self, s: Session, row: NewRow) -> int:
        """`CoreBackend.append` on SQLite."""
        mode, session_id, turn_id, surface, title = row.mode, row.session_id, row.turn_id, row.surface, row.title
        connection = _connection(s)
        now = sqlite_time(row.at)
        fold = None if title is None else title.casefold()
        taken = connection.execute(_TAKE_INDEX[mode], (now, title, fold, session_id)).fetchall()
        if not taken:
            raise SessionNotFound(session_id=session_id, mode=mode)
        index: int = taken[0][0] - 1
        values = (session_id, index, row.role, clip(row.content), row.tool_call_id, row.name, row.marker, turn_id)
        connection.execute(_INSERT_ROW[mode], (*values, surface, int(row.complete), now))
        if mode == SessionMode.DURABLE and row.role != "marker":
            connection.execute(_OPEN_TURN, (session_id, turn_id, surface, index, now, None, None))
        return index

    def update_text(self, s: Session, checkpoint: TextCheckpoint) -> None:
        """`CoreBackend.update_text` on SQLite."""
        mode, session_id, index = checkpoint.mode, checkpoint.session_id, checkpoint.index
        connection = _connection(s)
        if not connection.execute(_TOUCH[mode], (sqlite_time(checkpoint.at), session_id)).fetchall():
            raise SessionNotFound(session_id=session_id, mode=mode)
        if (
            connection.execute(
                _SET_TEXT[mode], (clip(checkpoint.content), int(checkpoint.complete), session_id, index)
            ).rowcount
            == 1
        ):
            return
        # Nothing updated: say why (the row does not exist, or it is a marker, which is written once).
        if connection.execute(_ROW_EXISTS[mode], (session_id, index)).fetchone() is None:
            raise RowNotFound(session_id, index)
        raise ValueError("marker rows are written once and never updated")

    def finish_turn(self, s: Session, ending: TurnEnding) -> None:
        """`CoreBackend.finish_turn` on SQLite."""
        mode, session_id, turn_id, stop_reason = ending.mode, ending.session_id, ending.turn_id, ending.stop_reason
        connection = _connection(s)
        now = sqlite_time(ending.at)
        touched = connection.execute(_TOUCH[mode], (now, session_id)).fetchall()
        if not touched:
            raise SessionNotFound(session_id=session_id, mode=mode)
        connection.execute(_COMPLETE_TURN_ROWS[mode], (session_id, turn_id))
        if mode != SessionMode.DURABLE:
            return
        if connection.execute(_END_TURN, (now, stop_reason, session_id, turn_id)).rowcount == 1:
            return
        # Already ended (the first stop reason wins), or never opened: a turn that failed before its
        # first row still gets its terminal record.
        surface, next_index = touched[0]
        connection.execute(_OPEN_TURN, (session_id, turn_id, surface, next_index, now, now, stop_reason))
