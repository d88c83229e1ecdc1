"""The session store's hot units of work in SQLAlchemy Core, over statements built once.

`session/list`, `session/messages`, `session/new` and the checkpoints of a turn (`append`, `update_text`,
`finish_turn`, `context`) run here: each is one plain function over the unit's `Session`, issuing prebuilt Core
statements on its connection. Building a statement costs more than executing it on SQLite, and ORM loading
costs several times a Core row; both showed up as most of a request (docs/sessions-storage.md, "The runner").
On SQLite the hottest of them run as SQL text instead (`app.sessions.store.sqlite_backend`), returning exactly what
these return. The rarer writes (close, kill, delete, recovery, snapshots) stay ORM in `app.sessions.store.session_store`.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cache
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import CursorResult
from sqlalchemy.orm import Session

from app.sessions.errors import RowNotFound, SessionClosed, SessionKilled, SessionNotFound, SessionNotOwned
from app.sessions.list_pages import ListQuery, Page, Position, position_of
from app.sessions.mode import EITHER, SessionMode
from app.sessions.store.rows import models, record_columns, record_from_columns, transcript_columns
from app.sessions.store.types import (
    SURFACES,
    SessionRecord,
    Surface,
    TranscriptRow,
    TurnEnd,
    check_choice,
    clip,
)
from app.storage.models import AcpTranscriptRow, AcpTurn
from app.storage.types import UTCDateTime, utcnow

__all__ = [
    "ContextRows",
    "after_op",
    "append",
    "context_rows",
    "create",
    "finish_turn",
    "get",
    "list_page",
    "merge_page",
    "messages",
    "messages_and_turn_ends",
    "page_modes",
    "save_snapshot",
    "update_text",
]

# (snapshot_id, boundary, messages JSON) or None; next_index;
# rows of (idx, role, content, tool_call_id, name)
ContextRows = tuple[tuple[int, int, str] | None, int, list[Any]]


_LIKE_SPECIAL = re.compile(r"[\\%_]")


def page_modes(query: ListQuery) -> tuple[SessionMode, ...]:
    return EITHER if query.mode is None else (query.mode,)


def after_op(mode: SessionMode, after: Position | None) -> str:
    """How a table's keys compare to the cursor's: an ACP row with the cursor's (time, id) follows a chat one."""
    if after is None:
        return ""
    return "<=" if mode < after.mode else "<"


def merge_page(parts: Sequence[list[SessionRecord]], limit: int | None) -> Page:
    """One page from each table's part (each sorted, at most `limit + 1` long)."""
    merged = parts[0] if len(parts) == 1 else list(heapq.merge(*parts, key=position_of, reverse=True))
    if limit is None or len(merged) <= limit:
        return Page(merged, more=False)
    return Page(merged[:limit], more=True)


# -- statements (bind parameters are named so they never collide with a column's automatic one) ----


@cache
def _get(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(*record_columns(model)).where(model.session_id == sa.bindparam("sid"))


@cache
def _page(
    mode: SessionMode, by_owner: bool, include_killed: bool, by_title: bool, after: str, limited: bool, dialect: str
) -> sa.Select[Any]:
    """One table's part of a `session/list` page, walking the index (owner?, last_activity, session_id) backwards:
    the range `last_activity <= at` is the index's, the rest filters the few rows of that very time. `after` is
    "" (from the top), "<" or "<=" (the cursor's own key follows in the other table: the mode breaks the tie)."""
    model = models(mode)[0]
    # Ids compare by code point, as Python merges the two tables and the list cache sorts
    # (whatever the server's locale).
    sid = sa.collate(model.session_id, "C") if dialect == "postgresql" else model.session_id
    query = sa.select(*record_columns(model))
    if by_owner:
        query = query.where(model.owner == sa.bindparam("owner"))
    if not include_killed:
        query = query.where(model.killed_at.is_(None))
    if by_title:
        query = query.where(model.title_fold.like(sa.bindparam("pattern"), escape="\\"))
    if after:
        at = sa.bindparam("at", type_=UTCDateTime())
        after_sid = sa.bindparam("after_sid", type_=sa.String())
        same_time = sid < after_sid if after == "<" else sid <= after_sid
        query = query.where(model.last_activity <= at, sa.or_(model.last_activity < at, same_time))
    query = query.order_by(model.last_activity.desc(), sid.desc())
    return query.limit(sa.bindparam("limit")) if limited else query


@cache
def _insert_session(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[0])


@cache
def _resume(mode: SessionMode) -> sa.Update:
    model = models(mode)[0]
    return (
        sa.update(model)
        .where(model.session_id == sa.bindparam("sid"))
        .values(closed_at=None, last_activity=sa.bindparam("now"))
    )


@cache
def _seq(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(model.seq).where(model.session_id == sa.bindparam("sid"))


@cache
def _store_seq(mode: SessionMode, exact: bool) -> sa.Update:
    """A reservation only ever raises the stored seq; the exact value replaces the reservation it was sent
    under, and nothing if a later bring-up has reserved since (`app.sessions.registry`)."""
    model = models(mode)[0]
    check = model.seq == sa.bindparam("reserved") if exact else model.seq < sa.bindparam("value")
    return sa.update(model).where(model.session_id == sa.bindparam("sid"), check).values(seq=sa.bindparam("value"))


@cache
def _total(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(model.next_index).where(model.session_id == sa.bindparam("sid"))


@cache
def _messages(mode: SessionMode, bounded: bool) -> sa.Select[Any]:
    transcript = models(mode)[1]
    query = sa.select(*transcript_columns(transcript)).where(transcript.session_id == sa.bindparam("sid"))
    if bounded:
        query = query.where(transcript.idx < sa.bindparam("before"))
    return query.order_by(transcript.idx.desc()).limit(sa.bindparam("limit"))


@cache
def _take_index(mode: SessionMode) -> sa.Update:
    """Bump the row counter and the activity time; RETURNING gives the new counter (index + 1)."""
    model = models(mode)[0]
    return (
        sa.update(model)
        .where(model.session_id == sa.bindparam("sid"))
        .values(
            next_index=model.next_index + 1,
            last_activity=sa.bindparam("now"),
            # A user row titles a session that has none (R-MULTI-4); other rows bind None.
            title=sa.func.coalesce(model.title, sa.bindparam("title")),
            title_fold=sa.func.coalesce(model.title_fold, sa.bindparam("fold")),
        )
        .returning(model.next_index)
    )


@cache
def _touch(mode: SessionMode) -> sa.Update:
    model = models(mode)[0]
    return (
        sa.update(model)
        .where(model.session_id == sa.bindparam("sid"))
        .values(last_activity=sa.bindparam("now"))
        .returning(model.interaction_surface, model.next_index)
    )


@cache
def _insert_row(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[1])


@cache
def _row_role(mode: SessionMode) -> sa.Select[Any]:
    transcript = models(mode)[1]
    return sa.select(transcript.role).where(
        transcript.session_id == sa.bindparam("sid"), transcript.idx == sa.bindparam("index")
    )


@cache
def _set_text(mode: SessionMode) -> sa.Update:
    transcript = models(mode)[1]
    return (
        sa.update(transcript)
        .where(
            transcript.session_id == sa.bindparam("sid"),
            transcript.idx == sa.bindparam("index"),
            transcript.role != "marker",
        )
        .values(content=sa.bindparam("text"), complete=sa.bindparam("done"))
    )


@cache
def _complete_turn_rows(mode: SessionMode) -> sa.Update:
    transcript = models(mode)[1]
    return (
        sa.update(transcript)
        .where(
            transcript.session_id == sa.bindparam("sid"),
            transcript.turn_id == sa.bindparam("turn"),
            transcript.complete == sa.false(),  # as the partial index states it (migration 0004)
        )
        .values(complete=True)
    )


@cache
def _state(mode: SessionMode) -> sa.Select[bool, bool, int]:
    model = models(mode)[0]
    return sa.select(model.killed_at.is_not(None), model.closed_at.is_not(None), model.next_index).where(
        model.session_id == sa.bindparam("sid")
    )


@cache
def _context_rows(mode: SessionMode) -> sa.Select[int, str, str, str | None, str | None]:
    # Only what replay reads (store_replay.rows_to_messages): no times to parse.
    t = models(mode)[1]
    return (
        sa.select(t.idx, t.role, t.content, t.tool_call_id, t.name)
        .where(
            t.session_id == sa.bindparam("sid"),
            t.idx > sa.bindparam("boundary"),
            t.interaction_surface == sa.bindparam("surface"),
        )
        .order_by(t.idx)
    )


_TURN_STATE = sa.select(AcpTurn.finished_at.is_(None)).where(
    AcpTurn.session_id == sa.bindparam("sid"), AcpTurn.turn_id == sa.bindparam("turn")
)
_INSERT_TURN = sa.insert(AcpTurn)
_END_TURN = (
    sa.update(AcpTurn)
    .where(
        AcpTurn.session_id == sa.bindparam("sid"),
        AcpTurn.turn_id == sa.bindparam("turn"),
        AcpTurn.finished_at.is_(None),
    )
    .values(finished_at=sa.bindparam("now"), stop_reason=sa.bindparam("reason"))
)
# The ended turns whose last row is in the page [first, last]. Grouping the rows from `first` on
# gives a turn's true last row when it is in the page; HAVING drops a turn that goes on after it.
# The rows read are a range of the primary key (session_id, idx). A running turn has no stop reason.
_TURN_ENDS = (
    sa.select(sa.func.max(AcpTranscriptRow.idx), AcpTurn.stop_reason)
    .join(
        AcpTurn,
        sa.and_(AcpTurn.session_id == AcpTranscriptRow.session_id, AcpTurn.turn_id == AcpTranscriptRow.turn_id),
    )
    .where(
        AcpTranscriptRow.session_id == sa.bindparam("sid"),
        AcpTranscriptRow.idx >= sa.bindparam("first"),
        AcpTurn.stop_reason.is_not(None),
    )
    .group_by(AcpTranscriptRow.turn_id, AcpTurn.stop_reason)
    .having(sa.func.max(AcpTranscriptRow.idx) <= sa.bindparam("last"))
    .order_by(sa.func.max(AcpTranscriptRow.idx))
)
# Snapshot statements per mode: chat sessions keep theirs in `chat_snapshots` (R-MULTI-5).


@cache
def _snapshot_state(mode: SessionMode) -> sa.Select[str, int]:
    model = models(mode)[0]
    return sa.select(model.interaction_surface, model.next_index).where(model.session_id == sa.bindparam("sid"))


@cache
def _latest_snapshot(mode: SessionMode) -> sa.Select[int]:
    snap = models(mode)[2]
    return sa.select(sa.func.max(snap.snapshot_id)).where(snap.session_id == sa.bindparam("sid"))


@cache
def _insert_snapshot(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[2])


@cache
def _prune_snapshots(mode: SessionMode) -> sa.Delete:
    snap = models(mode)[2]
    mine = (snap.session_id == sa.bindparam("sid"), snap.interaction_surface == sa.bindparam("surface"))
    newest = sa.select(snap.snapshot_id).where(*mine).order_by(snap.snapshot_id.desc()).limit(sa.bindparam("keep"))
    return sa.delete(snap).where(*mine, snap.snapshot_id.not_in(newest.scalar_subquery()))


@cache
def _snapshot(mode: SessionMode) -> sa.Select[int, int, str]:
    snap = models(mode)[2]
    return (
        sa.select(snap.snapshot_id, snap.boundary, snap.messages)
        .where(snap.session_id == sa.bindparam("sid"), snap.interaction_surface == sa.bindparam("surface"))
        .order_by(snap.snapshot_id.desc())
        .limit(1)
    )


# -- units -----------------------------------------------------------------------------------------


def get(s: Session, mode: SessionMode, session_id: str) -> SessionRecord | None:
    row = s.connection().execute(_get(mode), {"sid": session_id}).first()
    return None if row is None else record_from_columns(row, mode)


def seq_of(s: Session, mode: SessionMode, session_id: str) -> int:
    value = s.connection().execute(_seq(mode), {"sid": session_id}).scalar()
    return 0 if value is None else int(value)


def store_seq(s: Session, mode: SessionMode, session_id: str, value: int, reserved: int | None) -> None:
    params = {"sid": session_id, "value": value, "reserved": reserved}
    s.connection().execute(_store_seq(mode, reserved is not None), params)


def list_page(s: Session, query: ListQuery, after: Position | None, limit: int | None) -> Page:
    """The first `limit` sessions (None: all) of `query` after `after`, newest activity first (R-MULTI-4)."""
    connection = s.connection()
    dialect = connection.dialect.name
    fold = query.fold
    params = {
        "owner": query.owner,
        "pattern": None if fold is None else "%" + _LIKE_SPECIAL.sub(r"\\\g<0>", fold) + "%",
        "at": None if after is None else after.last_activity,
        "after_sid": None if after is None else after.session_id,
        "limit": None if limit is None else limit + 1,
    }
    parts = [
        [
            record_from_columns(row, mode)
            for row in connection.execute(
                _page(mode, query.owner is not None, query.include_killed, fold is not None,
                      after_op(mode, after), limit is not None, dialect),
                params,
            )
        ]
        for mode in page_modes(query)
    ]  # fmt: skip
    return merge_page(parts, limit)


def create(
    s: Session,
    mode: SessionMode,
    session_id: str,
    owner: str,
    agent_alias: str,
    workspace: str,
    surface: Surface,
    seq_reserved: int = 0,
) -> SessionRecord:
    connection = s.connection()
    now = utcnow()
    row = connection.execute(_get(mode), {"sid": session_id}).first()
    if row is not None:
        record = record_from_columns(row, mode)
        if record.killed:
            raise SessionKilled(session_id=session_id, mode=mode)
        if mode == SessionMode.CHAT and record.closed:
            raise SessionClosed(session_id=session_id)
        if record.owner != owner:
            raise SessionNotOwned(session_id=session_id)
        connection.execute(_resume(mode), {"sid": session_id, "now": now})
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
    connection.execute(_insert_session(mode), values)
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
    s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
) -> tuple[list[TranscriptRow], int]:
    connection = s.connection()
    total = connection.execute(_total(mode), {"sid": session_id}).scalar()
    if total is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    if not limit:
        return [], total
    query = _messages(mode, before is not None)
    rows = [
        TranscriptRow(*row) for row in connection.execute(query, {"sid": session_id, "before": before, "limit": limit})
    ]
    rows.reverse()
    return rows, total


def messages_and_turn_ends(
    s: Session,
    unit: Callable[[Session, SessionMode, str, int, int | None], tuple[list[TranscriptRow], int]],
    mode: SessionMode,
    session_id: str,
    limit: int,
    before: int | None,
) -> tuple[list[TranscriptRow], int, list[TurnEnd]]:
    """The page `unit` (`messages`, or its SQLite twin) reads, and in the same transaction the end of each ended
    turn whose last row is in it, ascending by index (`session/messages` with `turnEnds`). Chat sessions record
    no turns: none."""
    rows, total = unit(s, mode, session_id, limit, before)
    if not rows or mode != SessionMode.DURABLE:
        return rows, total, []
    params = {"sid": session_id, "first": rows[0].index, "last": rows[-1].index}
    ends = [TurnEnd(index, str(reason)) for index, reason in s.connection().execute(_TURN_ENDS, params)]
    return rows, total, ends


def append(
    s: Session,
    mode: SessionMode,
    session_id: str,
    role: str,
    content: str,
    tool_call_id: str | None,
    name: str | None,
    marker: str | None,
    turn_id: str,
    surface: str,
    complete: bool,
    now: datetime,
    title: str | None = None,
) -> int:
    """One transcript row at the session's next index (R-ACP-1), stamped `now` (the session's activity time too);
    the first non-marker row of an ACP turn opens its `acp_turns` record; `title` titles an untitled session. The
    counter is bumped and the row written in the writer's one transaction."""
    connection = s.connection()
    fold = None if title is None else title.casefold()
    taken = {"sid": session_id, "now": now, "title": title, "fold": fold}
    counter = connection.execute(_take_index(mode), taken).scalar()
    if counter is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    index: int = counter - 1
    row = {
        "session_id": session_id,
        "idx": index,
        "role": role,
        "content": clip(content),
        "tool_call_id": tool_call_id,
        "name": name,
        "marker": marker,
        "turn_id": turn_id,
        "interaction_surface": surface,
        "complete": complete,
        "created_at": now,
    }
    connection.execute(_insert_row(mode), row)
    opens_turn = mode == SessionMode.DURABLE and role != "marker"
    if opens_turn and connection.execute(_TURN_STATE, {"sid": session_id, "turn": turn_id}).first() is None:
        turn = {
            "session_id": session_id,
            "turn_id": turn_id,
            "interaction_surface": surface,
            "first_index": index,
            "started_at": now,
            "finished_at": None,
            "stop_reason": None,
        }
        connection.execute(_INSERT_TURN, turn)
    return index


def update_text(
    s: Session, mode: SessionMode, session_id: str, index: int, content: str, complete: bool, now: datetime
) -> None:
    connection = s.connection()
    if connection.execute(_touch(mode), {"sid": session_id, "now": now}).first() is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    params = {"sid": session_id, "index": index, "text": clip(content), "done": complete}
    if cast("CursorResult[Any]", connection.execute(_set_text(mode), params)).rowcount == 1:
        return
    # Nothing updated: say why (the row does not exist, or it is a marker, which is written once).
    if connection.execute(_row_role(mode), {"sid": session_id, "index": index}).scalar() is None:
        raise RowNotFound(session_id, index)
    raise ValueError("marker rows are written once and never updated")


def finish_turn(s: Session, mode: SessionMode, session_id: str, turn_id: str, stop_reason: str, now: datetime) -> None:
    connection = s.connection()
    session = connection.execute(_touch(mode), {"sid": session_id, "now": now}).first()
    if session is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    connection.execute(_complete_turn_rows(mode), {"sid": session_id, "turn": turn_id})
    if mode != SessionMode.DURABLE:
        return
    ended = {"sid": session_id, "turn": turn_id, "now": now, "reason": stop_reason}
    if cast("CursorResult[Any]", connection.execute(_END_TURN, ended)).rowcount == 1:
        return
    # Already ended (the first stop reason wins), or never opened:
    if connection.execute(_TURN_STATE, {"sid": session_id, "turn": turn_id}).first() is None:
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
        connection.execute(_INSERT_TURN, turn)


def context_rows(s: Session, mode: SessionMode, session_id: str, surface: Surface) -> ContextRows:
    """What `SessionStore.context` rebuilds from: the latest snapshot of `surface`, and the rows after it."""
    connection = s.connection()
    state = connection.execute(_state(mode), {"sid": session_id}).first()
    if state is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    killed, closed, next_index = state
    if killed:
        raise SessionKilled(session_id=session_id, mode=mode)
    if mode == SessionMode.CHAT and closed:
        raise SessionClosed(session_id=session_id)
    found = connection.execute(_snapshot(mode), {"sid": session_id, "surface": surface}).first()
    snapshot = None if found is None else (found[0], found[1], found[2])
    boundary = -1 if snapshot is None else snapshot[1]
    params = {"sid": session_id, "boundary": boundary, "surface": surface}
    rows: Sequence[Any] = connection.execute(_context_rows(mode), params).all()
    return snapshot, next_index, list(rows)


def save_snapshot(
    s: Session, mode: SessionMode, session_id: str, payload: str, boundary: int, surface: str | None, keep: int
) -> tuple[int, str]:
    """A snapshot and its boundary, then only the newest `keep` of its surface are kept (R-ACP-2); returns its id
    and surface."""
    connection = s.connection()
    state = connection.execute(_snapshot_state(mode), {"sid": session_id}).first()
    if state is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    own_surface, next_index = state
    chosen = surface if surface is not None else own_surface
    check_choice("surface", chosen, SURFACES)
    if not -1 <= boundary < next_index:
        raise ValueError(f"boundary {boundary} is outside the transcript (-1..{next_index - 1})")
    snapshot_id: int = (connection.execute(_latest_snapshot(mode), {"sid": session_id}).scalar() or 0) + 1
    row = {
        "session_id": session_id,
        "snapshot_id": snapshot_id,
        "messages": payload,
        "boundary": boundary,
        "interaction_surface": chosen,
        "created_at": utcnow(),
    }
    connection.execute(_insert_snapshot(mode), row)
    connection.execute(_prune_snapshots(mode), {"sid": session_id, "surface": chosen, "keep": keep})
    return snapshot_id, chosen
