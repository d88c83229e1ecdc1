"""Forking a stored session (R-BRANCH-1): one transaction copies the parent's transcript rows before the fork point,
its finished turns there, and the newest retained-context snapshot of each surface that covers no row at or after
it, into a new session of the caller's. The parent is only read; a SIGKILL leaves the child whole or absent.

What the child's model is given is then what the parent's had at that point: the copied snapshot (a trimmed
parent's context included) with the copied rows after its boundary replayed on top (docs/sessions.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import msgspec
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.errors import BadForkPoint
from app.sessions.mode import SessionMode
from app.sessions.store.list_cache import Listed
from app.sessions.store.rows import check_resumable, load_session, models, to_record
from app.sessions.store.types import SessionRecord, check_id
from app.sessions.store.units import StoreUnits
from app.storage.models import AcpTurn
from app.storage.types import utcnow

__all__ = ["ForkRequest", "Forked", "SessionForks"]


class ForkRequest(msgspec.Struct, frozen=True):
    """Fork `parent_id` into `child_id`, owned by `owner`, at `at_index` (None: after the last finished turn)."""

    mode: SessionMode
    parent_id: str
    child_id: str
    owner: str
    at_index: int | None = None


class Forked(msgspec.Struct, frozen=True):
    """The child's record and the transcript index it was forked at (its row count)."""

    record: SessionRecord
    forked_at: int


class SessionForks:
    """Forks of stored sessions."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def fork(self, request: ForkRequest) -> Forked:
        """The child, committed. Raises BadForkPoint, SessionNotFound, SessionKilled."""
        check_id("session_id", request.child_id)
        check_id("owner", request.owner)
        return await self._units.write("fork", request.child_id, lambda f: Listed.of(f.record), _fork, request)


def _cut(s: Session, request: ForkRequest, next_index: int) -> int:
    """Where the child's transcript ends: `at_index` (a user row), else before the first unfinished turn."""
    rows = models(request.mode)[1]
    if request.at_index is not None:
        parent, at = request.parent_id, request.at_index
        row = s.execute(sa.select(rows.role, rows.turn_id).where(rows.session_id == parent, rows.idx == at)).first()
        if row is None or row.role != "user":
            raise BadForkPoint(f"atIndex {at} is not the index of a user prompt row")
        # A user row after others of its turn is a steer (R-BRANCH-3): a fork there would cut that turn in two.
        earlier = sa.select(rows.idx).where(rows.session_id == parent, rows.turn_id == row.turn_id, rows.idx < at)
        if s.execute(earlier.limit(1)).first() is not None:
            raise BadForkPoint(f"atIndex {at} is a message steered into a turn, not the turn's prompt")
        return at
    if request.mode == SessionMode.DURABLE:
        first_open = sa.select(sa.func.min(AcpTurn.first_index)).where(
            AcpTurn.session_id == request.parent_id, AcpTurn.finished_at.is_(None)
        )
    else:  # chat rows have no turn records: a turn with a row still open is the running one
        open_turns = sa.select(rows.turn_id).where(rows.session_id == request.parent_id, rows.complete.is_(False))
        first_open = sa.select(sa.func.min(rows.idx)).where(
            rows.session_id == request.parent_id, rows.turn_id.in_(open_turns)
        )
    found = s.execute(first_open).scalar()
    return next_index if found is None else min(int(found), next_index)


def _fork(s: Session, request: ForkRequest) -> Forked:
    mode, parent_id, child_id = request.mode, request.parent_id, request.child_id
    session_model, rows, snaps = models(mode)
    parent = load_session(s, mode, parent_id)
    check_resumable(parent, mode)
    cut = _cut(s, request, parent.next_index)
    now = utcnow()
    child = session_model(
        session_id=child_id,
        owner=request.owner,
        agent_alias=parent.agent_alias,
        workspace_dir=parent.workspace_dir,
        interaction_surface=parent.interaction_surface,
        created_at=now,
        last_activity=now,
        next_index=cut,
        title=parent.title if cut > 0 else None,
        title_fold=parent.title_fold if cut > 0 else None,
        seq=0,
        model=parent.model,
        temperature=parent.temperature,
        parent_id=parent_id,
        forked_at=cut,
    )
    s.add(child)
    s.flush()
    with _copies_of_checked_rows(s):
        _copy_rows(s, rows, parent_id, child_id, cut)
        if mode == SessionMode.DURABLE:
            _copy_turns(s, parent_id, child_id, cut)
        _copy_snapshots(s, snaps, parent_id, child_id, cut)
    return Forked(to_record(child, mode), cut)


@contextmanager
def _copies_of_checked_rows(s: Session) -> Iterator[None]:
    """SQLite: the copies skip the tables' CHECK constraints, which their source rows met when they were stored
    (the same columns of the same tables, copied unchanged but for `session_id`, which no CHECK reads). Evaluating
    `role IN (…)` and `interaction_surface IN (…)` again was a third of copying 10,000 rows (docs/sessions.md,
    "Branching"). NOT NULL, the keys and the foreign keys are still enforced; the pragma is this connection's
    and is put back before the unit returns, so no other write runs without the checks."""
    connection = s.connection()
    if connection.dialect.name != "sqlite":
        yield
        return
    driver = cast(sqlite3.Connection, connection.connection.driver_connection)
    driver.execute("PRAGMA ignore_check_constraints=ON")
    try:
        yield
    finally:
        driver.execute("PRAGMA ignore_check_constraints=OFF")


def _copy_rows(s: Session, rows: Any, parent_id: str, child_id: str, cut: int) -> None:
    cols = ["idx", "role", "content", "tool_call_id", "name", "marker", "turn_id", "interaction_surface",
            "complete", "created_at", "rolled_back"]  # fmt: skip
    table = cast(sa.Table, rows.__table__)
    source = sa.select(sa.literal(child_id), *(table.c[c] for c in cols)).where(
        table.c.session_id == parent_id, table.c.idx < cut
    )
    s.execute(sa.insert(table).from_select(["session_id", *cols], source))


def _copy_turns(s: Session, parent_id: str, child_id: str, cut: int) -> None:
    table = cast(sa.Table, AcpTurn.__table__)
    cols = ["turn_id", "interaction_surface", "first_index", "started_at", "finished_at", "stop_reason"]
    source = sa.select(sa.literal(child_id), *(table.c[c] for c in cols)).where(
        table.c.session_id == parent_id, table.c.first_index < cut, table.c.finished_at.is_not(None)
    )
    s.execute(sa.insert(table).from_select(["session_id", *cols], source))


def _copy_snapshots(s: Session, snaps: Any, parent_id: str, child_id: str, cut: int) -> None:
    """Each surface's newest snapshot covering only rows before the cut; none: the child replays its rows."""
    table = cast(sa.Table, snaps.__table__)
    newest = (
        sa.select(table.c.interaction_surface, sa.func.max(table.c.snapshot_id).label("sid"))
        .where(table.c.session_id == parent_id, table.c.boundary < cut)
        .group_by(table.c.interaction_surface)
        .subquery()
    )
    cols = ["snapshot_id", "messages", "boundary", "interaction_surface", "created_at"]
    source = (
        sa.select(sa.literal(child_id), *(table.c[c] for c in cols))
        .join(
            newest,
            sa.and_(newest.c.interaction_surface == table.c.interaction_surface, newest.c.sid == table.c.snapshot_id),
        )
        .where(table.c.session_id == parent_id)
    )
    s.execute(sa.insert(table).from_select(["session_id", *cols], source))
