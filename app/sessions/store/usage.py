"""What each turn cost (R-MODEL-5): one row per finished turn in `acp_turn_usage` / `chat_turn_usage` (migration
0009), written once as the turn ends and read by `session/usage`. `SessionStore.usage` is this part."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.sessions.mode import MODES, SessionMode
from app.sessions.store.list_cache import UNCHANGED
from app.sessions.store.rows import load_session
from app.sessions.store.types import MAX_TURN_ID_LEN, check_choice, check_id
from app.sessions.store.units import StoreUnits
from app.storage.models import AcpTurnUsage, ChatTurnUsage
from app.storage.types import utcnow

__all__ = ["TurnCost", "TurnUsages", "usage_model"]


@dataclass(frozen=True, slots=True)
class TurnCost:
    """One finished turn's provider steps summed; `index` numbers the session's counted turns from 0."""

    index: int
    turn_id: str
    provider: str
    model: str | None
    steps: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None  # None: unpriced
    at: datetime


def usage_model(mode: SessionMode) -> Any:
    """A mode's turn-usage table."""
    check_choice("mode", mode, MODES)
    return AcpTurnUsage if mode == SessionMode.DURABLE else ChatTurnUsage


class TurnUsages:
    """The usage side of the store (`SessionStore.usage`)."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def record(
        self,
        session_id: str,
        *,
        mode: SessionMode = SessionMode.DURABLE,
        turn_id: str,
        provider: str,
        model: str | None,
        steps: int,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        cost_usd: float | None,
    ) -> int:
        """Commit a finished turn's usage as the session's next counted turn; returns its index. One transaction."""
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        table = usage_model(mode)
        now = utcnow()
        values = {
            "session_id": session_id,
            "turn_id": turn_id,
            "provider": provider[:255],
            "model": None if model is None else model[:255],
            "steps": steps,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens,
            "cost_usd": cost_usd,
            "created_at": now,
        }

        def unit(s: Session) -> int:
            load_session(s, mode, session_id)  # SessionNotFound rather than a foreign-key error
            last = s.execute(sa.select(sa.func.max(table.idx)).where(table.session_id == session_id)).scalar()
            index = 0 if last is None else int(last) + 1
            s.execute(sa.insert(table).values(idx=index, **values))
            return index

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
