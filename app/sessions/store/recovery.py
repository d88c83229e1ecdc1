"""Finding and closing the turns a crash left open (R-ACP-5, R-ACP-7); runs inside the store's transaction."""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.storage.models import AcpTranscriptRow, AcpTurn
from app.storage.types import utcnow

__all__ = ["STOP_INTERRUPTED", "close_open_turns"]

STOP_INTERRUPTED: Final = "interrupted"


def close_open_turns(s: Session, session_id: str, surface: str) -> str | None:
    """Finish every unfinished turn of `surface`; return the turn id the interruption marker belongs to.

    Unfinished = a turn with no terminal record (`finish_turn` never ran) or one that still has an incomplete
    row. Rows keep the content of their last checkpoint and are only flagged complete, so the progress the
    client saw is kept exactly once (no copy is made). Rows and turns of other surfaces are not touched: a later
    recovery on that surface must find them as they were (R-ACP-7). None when nothing was open.
    """
    row = AcpTranscriptRow
    open_turns = (
        s.scalars(
            sa.select(AcpTurn).where(
                AcpTurn.session_id == session_id,
                AcpTurn.finished_at.is_(None),
                AcpTurn.interaction_surface == surface,
            )
        )
    ).all()
    dangling = (
        s.scalars(
            sa.select(row.turn_id)
            .distinct()
            .where(row.session_id == session_id, row.complete == sa.false(), row.interaction_surface == surface)
        )
    ).all()
    turn_ids = {turn.turn_id for turn in open_turns} | set(dangling)
    if not turn_ids:
        return None
    s.execute(
        sa.update(row)
        .where(
            row.session_id == session_id,
            row.turn_id.in_(turn_ids),
            row.interaction_surface == surface,
            row.complete == sa.false(),
        )
        .values(complete=True)
    )
    now = utcnow()
    for turn in open_turns:
        turn.finished_at = now
        turn.stop_reason = STOP_INTERRUPTED
    # The marker follows the latest cut-short turn; one with no row yet counts from where it began.
    last_row_turn = s.scalar(
        sa.select(row.turn_id)
        .where(row.session_id == session_id, row.turn_id.in_(turn_ids), row.interaction_surface == surface)
        .order_by(row.idx.desc())
        .limit(1)
    )
    if last_row_turn is not None:
        return last_row_turn
    return max(open_turns, key=lambda turn: turn.first_index).turn_id
