"""Rolling back a stored session's last turns (R-BRANCH-2), in one transaction: the turns' rows are marked
`rolled_back` (kept, never renumbered), snapshots covering any of them are dropped (the retained context is rebuilt
from the newest one left plus the retained rows after it), and a `marker:"rolled_back"` row is appended at the next
index, so new rows continue the numbering. A SIGKILL leaves it fully applied or not at all.
"""

from __future__ import annotations

from typing import cast

import msgspec
import orjson
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.errors import BadRollback
from app.sessions.mode import SessionMode
from app.sessions.store.rows import add_row, check_resumable, load_session, models, transcript_columns
from app.sessions.store.types import TranscriptRow
from app.sessions.store.units import StoreUnits

__all__ = ["ROLLED_BACK", "RolledBack", "SessionRollbacks"]

ROLLED_BACK = "rolled_back"


class RolledBack(msgspec.Struct, frozen=True):
    """`turns` turns dropped, their first row at `from_index`; the marker row at `marker_index`."""

    turns: int
    from_index: int
    marker_index: int


class SessionRollbacks:
    """Rollbacks of stored sessions, and the transcript with what they dropped."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def rollback(self, session_id: str, turns: int, *, mode: SessionMode, surface: str) -> RolledBack:
        """Drop the last `turns` retained turns (1 ≤ turns ≤ retained turns, else BadRollback)."""
        return cast(
            RolledBack,
            await self._units.write(
                "rollback",
                session_id,
                None,
                _rollback,
                mode,
                session_id,
                turns,
                surface,
            ),
        )

    async def messages(
        self, session_id: str, *, mode: SessionMode, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int]:
        """`Transcript.messages` with the rolled-back rows shown (`includeRolledBack`)."""
        return cast(
            tuple[list[TranscriptRow], int],
            await self._units.db.read(_all_messages, mode, session_id, limit, before),
        )


def _all_messages(
    s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
) -> tuple[list[TranscriptRow], int]:
    session = load_session(s, mode, session_id)
    rows = models(mode)[1]
    query = sa.select(*transcript_columns(rows)).where(rows.session_id == session_id)
    if before is not None:
        query = query.where(rows.idx < before)
    found = [TranscriptRow(*row) for row in s.execute(query.order_by(rows.idx.desc()).limit(limit))]
    found.reverse()
    return found, session.next_index


def retained_turns(s: Session, mode: SessionMode, session_id: str, limit: int | None = None) -> list[tuple[str, int]]:
    """The retained turns (turn id, first index), newest first: groups of rows not rolled back, markers apart;
    the newest `limit` of them (None: all)."""
    rows = models(mode)[1]
    first = sa.func.min(rows.idx)
    query = (
        sa.select(rows.turn_id, first)
        .where(rows.session_id == session_id, rows.rolled_back.is_(False), rows.role != "marker")
        .group_by(rows.turn_id)
        .order_by(first.desc())
        .limit(limit)
    )
    return [(turn, int(index)) for turn, index in s.execute(query)]


def _rollback(s: Session, mode: SessionMode, session_id: str, turns: int, surface: str) -> RolledBack:
    session = load_session(s, mode, session_id)
    check_resumable(session, mode)
    # Only the newest `turns` turns come back (not every turn of a long session); all of them only to say how
    # many there are when there are too few.
    retained = retained_turns(s, mode, session_id, turns) if turns >= 1 else []
    if not 1 <= turns <= len(retained):
        known = len(retained_turns(s, mode, session_id))
        raise BadRollback(f"turns must be between 1 and {known} (the completed turns)")
    from_index = retained[turns - 1][1]
    _, rows, snaps = models(mode)
    rows_table = cast(sa.Table, rows.__table__)
    s.execute(
        sa.update(rows_table)
        .where(rows_table.c.session_id == session_id, rows_table.c.idx >= from_index)
        .values(rolled_back=True)
    )
    snap_table = cast(sa.Table, snaps.__table__)
    s.execute(sa.delete(snap_table).where(snap_table.c.session_id == session_id, snap_table.c.boundary >= from_index))
    content = orjson.dumps({"turns": turns, "from_index": from_index}).decode()
    marker_index = add_row(
        s, session, mode, role="marker", content=content, tool_call_id=None, name=None, marker=ROLLED_BACK,
        turn_id=f"rollback-{session.next_index}", surface=surface, complete=True,
    )  # fmt: skip
    return RolledBack(turns, from_index, marker_index)
