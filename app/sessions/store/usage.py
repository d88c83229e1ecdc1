"""What each turn cost (R-MODEL-5): one row per finished turn in `acp_turn_usage` / `chat_turn_usage` (migration
0009), written once as the turn ends and read by `session/usage`. `SessionStore.usage` is this part."""

from __future__ import annotations

import builtins
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.mode import MODES, SessionMode
from app.sessions.store.list_cache import UNCHANGED
from app.sessions.store.rows import load_session
from app.sessions.store.types import MAX_TURN_ID_LEN, TurnCost, UsageRecord, check_choice, check_id
from app.sessions.store.units import StoreUnits
from app.storage.models import AcpTurnUsage, ChatTurnUsage
from app.storage.types import utcnow

__all__ = ["TurnUsages", "add_usage", "usage_model"]


def usage_model(mode: SessionMode) -> Any:
    """A mode's turn-usage table."""
    check_choice("mode", mode, MODES)
    return AcpTurnUsage if mode == SessionMode.DURABLE else ChatTurnUsage


@cache
def _statements(mode: SessionMode) -> tuple[Any, Any]:
    """(the session's last index, the insert), built once per mode: a turn's end pays for no SQL compilation."""
    table = usage_model(mode)
    last = sa.select(sa.func.max(table.idx)).where(table.session_id == sa.bindparam("sid"))
    return last, sa.insert(table)


def add_usage(s: Session, mode: SessionMode, session_id: str, record: UsageRecord, at: datetime) -> int:
    """Insert a turn's usage as the session's next counted turn, in the caller's transaction; its index."""
    last_of, insert = _statements(mode)
    connection = s.connection()
    last = connection.execute(last_of, {"sid": session_id}).scalar()
    index = 0 if last is None else int(last) + 1
    values = {
        "session_id": session_id, "idx": index, "turn_id": record.turn_id, "provider": record.provider[:255],
        "model": None if record.model is None else record.model[:255], "steps": record.steps,
        "input_tokens": record.input_tokens, "output_tokens": record.output_tokens,
        "cache_read_tokens": record.cache_read_tokens, "cache_write_tokens": record.cache_write_tokens,
        "cost_usd": record.cost_usd, "created_at": at,
    }  # fmt: skip
    connection.execute(insert, values)
    return index


class TurnUsages:
    """The usage side of the store (`SessionStore.usage`)."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def record(self, session_id: str, record: UsageRecord, *, mode: SessionMode = SessionMode.DURABLE) -> int:
        """Commit a finished turn's usage as the session's next counted turn, alone; returns its index. (A turn's
        end stores it with the turn: `Transcript.finish_turn(usage=…)`, one transaction.)"""
        check_id("turn_id", record.turn_id, MAX_TURN_ID_LEN)
        usage_model(mode)
        now = utcnow()

        def unit(s: Session) -> int:
            load_session(s, mode, session_id)  # SessionNotFound rather than a foreign-key error
            return add_usage(s, mode, session_id, record, now)

        index: int = await self._units.write("record_usage", session_id, lambda _: UNCHANGED, unit)
        return index

    async def turns(self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE) -> builtins.list[TurnCost]:
        """Every counted turn of the session, in order. Readable whatever the session's state."""
        table = usage_model(mode)

        def unit(s: Session) -> builtins.list[TurnCost]:
            query = sa.select(table).where(table.session_id == session_id).order_by(table.idx)
            return [_cost(row) for row in s.execute(query).scalars()]

        return await self._units.db.read(unit)


def _cost(row: Any) -> TurnCost:
    return TurnCost(
        row.idx,
        row.turn_id,
        row.provider,
        row.model,
        row.steps,
        row.input_tokens,
        row.output_tokens,
        row.cache_read_tokens,
        row.cache_write_tokens,
        row.cost_usd,
        row.created_at,
    )
