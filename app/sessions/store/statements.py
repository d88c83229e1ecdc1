"""The session store's SQL statements in SQLAlchemy Core, each built once (per mode and shape) and cached.

Bind parameters are named so they never collide with a column's automatic one. `CoreBackend`
(`app.sessions.store.core_backend`) executes them; `SqliteBackend` has the hottest of them as SQL text.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

import sqlalchemy as sa

from app.sessions.list_pages import ListQuery, Page, Position, position_of
from app.sessions.mode import EITHER, SessionMode
from app.sessions.store.rows import models, record_columns, transcript_columns
from app.sessions.store.types import SessionRecord
from app.storage.models import AcpTranscriptRow, AcpTurn
from app.storage.types import UTCDateTime

LIKE_SPECIAL = re.compile(r"[\\%_]")


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


@cache
def get(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(*record_columns(model)).where(model.session_id == sa.bindparam("sid"))


@cache
def page(
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
def insert_session(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[0])


@cache
def resume(mode: SessionMode) -> sa.Update:
    model = models(mode)[0]
    return (
        sa.update(model)
        .where(model.session_id == sa.bindparam("sid"))
        .values(closed_at=None, last_activity=sa.bindparam("now"))
    )


@cache
def seq(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(model.seq).where(model.session_id == sa.bindparam("sid"))


@cache
def store_seq(mode: SessionMode, exact: bool) -> sa.Update:
    """A reservation only ever raises the stored seq; the exact value replaces the reservation it was sent
    under, and nothing if a later bring-up has reserved since (`app.sessions.registry`)."""
    model = models(mode)[0]
    check = model.seq == sa.bindparam("reserved") if exact else model.seq < sa.bindparam("value")
    return sa.update(model).where(model.session_id == sa.bindparam("sid"), check).values(seq=sa.bindparam("value"))


@cache
def total(mode: SessionMode) -> sa.Select[Any]:
    model = models(mode)[0]
    return sa.select(model.next_index).where(model.session_id == sa.bindparam("sid"))


@cache
def messages(mode: SessionMode, bounded: bool) -> sa.Select[Any]:
    transcript = models(mode)[1]
    query = sa.select(*transcript_columns(transcript)).where(
        transcript.session_id == sa.bindparam("sid"), transcript.rolled_back.is_(False)
    )
    if bounded:
        query = query.where(transcript.idx < sa.bindparam("before"))
    return query.order_by(transcript.idx.desc()).limit(sa.bindparam("limit"))


@cache
def take_index(mode: SessionMode) -> sa.Update:
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
def touch(mode: SessionMode) -> sa.Update:
    model = models(mode)[0]
    return (
        sa.update(model)
        .where(model.session_id == sa.bindparam("sid"))
        .values(last_activity=sa.bindparam("now"))
        .returning(model.interaction_surface, model.next_index)
    )


@cache
def insert_row(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[1])


@cache
def row_role(mode: SessionMode) -> sa.Select[Any]:
    transcript = models(mode)[1]
    return sa.select(transcript.role).where(
        transcript.session_id == sa.bindparam("sid"), transcript.idx == sa.bindparam("index")
    )


@cache
def set_text(mode: SessionMode) -> sa.Update:
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
def complete_turn_rows(mode: SessionMode) -> sa.Update:
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
def state(mode: SessionMode) -> sa.Select[bool, bool, int]:
    model = models(mode)[0]
    return sa.select(model.killed_at.is_not(None), model.closed_at.is_not(None), model.next_index).where(
        model.session_id == sa.bindparam("sid")
    )


@cache
def context_rows(mode: SessionMode) -> sa.Select[int, str, str, str | None, str | None]:
    # Only what replay reads (store_replay.rows_to_messages): no times to parse.
    t = models(mode)[1]
    return (
        sa.select(t.idx, t.role, t.content, t.tool_call_id, t.name)
        .where(
            t.session_id == sa.bindparam("sid"),
            t.idx > sa.bindparam("boundary"),
            t.interaction_surface == sa.bindparam("surface"),
            t.rolled_back.is_(False),  # R-BRANCH-2
        )
        .order_by(t.idx)
    )


TURN_STATE = sa.select(AcpTurn.finished_at.is_(None)).where(
    AcpTurn.session_id == sa.bindparam("sid"), AcpTurn.turn_id == sa.bindparam("turn")
)
INSERT_TURN = sa.insert(AcpTurn)
END_TURN = (
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
TURN_ENDS = (
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
def snapshot_state(mode: SessionMode) -> sa.Select[str, int]:
    model = models(mode)[0]
    return sa.select(model.interaction_surface, model.next_index).where(model.session_id == sa.bindparam("sid"))


@cache
def latest_snapshot(mode: SessionMode) -> sa.Select[int]:
    snap = models(mode)[2]
    return sa.select(sa.func.max(snap.snapshot_id)).where(snap.session_id == sa.bindparam("sid"))


@cache
def insert_snapshot(mode: SessionMode) -> sa.Insert:
    return sa.insert(models(mode)[2])


@cache
def prune_snapshots(mode: SessionMode) -> sa.Delete:
    snap = models(mode)[2]
    mine = (snap.session_id == sa.bindparam("sid"), snap.interaction_surface == sa.bindparam("surface"))
    newest = sa.select(snap.snapshot_id).where(*mine).order_by(snap.snapshot_id.desc()).limit(sa.bindparam("keep"))
    return sa.delete(snap).where(*mine, snap.snapshot_id.not_in(newest.scalar_subquery()))


@cache
def snapshot(mode: SessionMode) -> sa.Select[int, int, str]:
    snap = models(mode)[2]
    return (
        sa.select(snap.snapshot_id, snap.boundary, snap.messages)
        .where(snap.session_id == sa.bindparam("sid"), snap.interaction_surface == sa.bindparam("surface"))
        .order_by(snap.snapshot_id.desc())
        .limit(1)
    )
