"""Remembered permission rules on the database (R-GUARD-3): add, list and delete, keyed by principal and agent.

Imports SQLAlchemy: the daemon builds it through `app.storage.deferred` like every store, and the turn code sees
it only as the `RuleBook` protocol (`app.agents.permissions.remembered`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.orm import Session

from app.agents.permissions.remembered import StoredRule
from app.storage.database import Database
from app.storage.models import PermissionRule
from app.storage.types import utcnow

__all__ = ["PermissionStore"]


def _record(row: PermissionRule) -> StoredRule:
    return StoredRule(row.rule_id, row.principal, row.agent_alias, row.decision, row.pattern, row.created_at)


class PermissionStore:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._clock = clock

    async def add(self, principal: str, agent_alias: str, decision: str, pattern: str) -> StoredRule:
        """Store a rule; the same rule twice is stored once (the existing one is returned)."""
        query = select(PermissionRule).where(
            PermissionRule.principal == principal,
            PermissionRule.agent_alias == agent_alias,
            PermissionRule.decision == decision,
            PermissionRule.pattern == pattern,
        )
        now = self._clock()

        def unit(session: Session) -> StoredRule:
            existing = session.scalars(query).first()
            if existing is not None:
                return _record(existing)
            row = PermissionRule(
                rule_id="rule_" + secrets.token_hex(8),
                principal=principal,
                agent_alias=agent_alias,
                decision=decision,
                pattern=pattern,
                created_at=now,
            )
            session.add(row)
            return _record(row)

        return await self._db.write(unit)

    async def list(self, principal: str | None = None, agent_alias: str | None = None) -> list[StoredRule]:
        """Rules oldest first; only `principal`'s and `agent_alias`'s when given."""
        query = select(PermissionRule)
        if principal is not None:
            query = query.where(PermissionRule.principal == principal)
        if agent_alias is not None:
            query = query.where(PermissionRule.agent_alias == agent_alias)
        query = query.order_by(PermissionRule.created_at, PermissionRule.rule_id)

        def unit(session: Session) -> list[StoredRule]:
            return [_record(row) for row in session.scalars(query)]

        return await self._db.read(unit)

    async def get(self, rule_id: str) -> StoredRule | None:
        query = select(PermissionRule).where(PermissionRule.rule_id == rule_id)

        def unit(session: Session) -> StoredRule | None:
            row = session.scalars(query).one_or_none()
            return None if row is None else _record(row)

        return await self._db.read(unit)

    async def delete(self, rule_id: str) -> bool:
        query = delete(PermissionRule).where(PermissionRule.rule_id == rule_id)

        def unit(session: Session) -> bool:
            return cast("CursorResult[Any]", session.execute(query)).rowcount == 1

        return await self._db.write(unit)
