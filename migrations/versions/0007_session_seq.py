"""`seq` on both session tables (R-MULTI-1): the session's last `session/update` number, kept across restarts.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04

Every `session/update` carries a per-session `seq` that continues after a restart. The daemon stores a
reservation ahead of what it has sent (`app.sessions.registry`) and the exact value when it lets a session go,
so after a crash numbering jumps ahead rather than repeat. Existing sessions start at 0: they have sent nothing
numbered yet. Types are spelled out so this revision stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("acp_sessions", "chat_sessions")
# 64-bit as every counter is since 0003: BIGINT on PostgreSQL, INTEGER (already 64-bit) on SQLite.
_INT64 = sa.Integer().with_variant(sa.BigInteger(), "postgresql")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("seq", _INT64, server_default=sa.text("0"), nullable=False))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("seq")
