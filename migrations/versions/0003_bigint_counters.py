"""Transcript indexes, counters and snapshot ids are 64-bit on every backend (R-STORE-1).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

SQLite's INTEGER is already a 64-bit integer, so on SQLite this revision changes nothing (and rebuilds no table).
PostgreSQL's INTEGER is 32-bit: there the columns become BIGINT, so that a `session/messages` `before` up to
2**63 - 1 (which the protocol allows) compares instead of failing to bind, and no counter can wrap.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (
    ("acp_sessions", "next_index"),
    ("chat_sessions", "next_index"),
    ("acp_transcript", "idx"),
    ("chat_messages", "idx"),
    ("acp_turns", "first_index"),
    ("acp_snapshots", "snapshot_id"),
    ("acp_snapshots", "boundary"),
)


def _retype(old: sa.types.TypeEngine[int], new: sa.types.TypeEngine[int]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column in _COLUMNS:
        op.alter_column(table, column, type_=new, existing_type=old, existing_nullable=False)


def upgrade() -> None:
    _retype(sa.Integer(), sa.BigInteger())


def downgrade() -> None:
    _retype(sa.BigInteger(), sa.Integer())
