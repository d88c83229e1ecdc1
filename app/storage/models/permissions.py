"""Remembered permission rules (R-GUARD-3): an `allow_always` answered with `remember:"agent"` is kept as an allow
rule for that principal and agent, used by every later session of theirs until deleted (`permissions/delete`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.storage.models.base import Base
from app.storage.types import UTCDateTime


class PermissionRule(Base):
    __tablename__ = "permission_rules"
    __table_args__ = (
        CheckConstraint("decision IN ('allow', 'ask', 'deny')", name="decision"),
        Index("ix_permission_rules_principal_agent", "principal", "agent_alias"),
    )

    rule_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    principal: Mapped[str] = mapped_column(String(255))
    agent_alias: Mapped[str] = mapped_column(String(255))
    decision: Mapped[str] = mapped_column(String(8))
    pattern: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
