"""Forks and rollbacks (R-BRANCH-1, R-BRANCH-2): `parent_id` and `forked_at` on both session tables, `rolled_back`
on both transcript tables.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05

`session/fork` copies a session's rows before a prompt into a new session; the child keeps the parent's id and the
transcript index it was forked at, both NULL on a session that was not forked. No foreign key: deleting a parent
leaves its forks whole (they own copies). `session/rollback` marks the rows of the turns it drops `rolled_back`
(kept, never renumbered; false on every row before). Types are spelled out so this revision stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("acp_sessions", "chat_sessions")
_ROWS = ("acp_transcript", "chat_messages")
# 64-bit as every counter is since 0003: BIGINT on PostgreSQL, INTEGER (already 64-bit) on SQLite.
_INT64 = sa.Integer().with_variant(sa.BigInteger(), "postgresql")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("parent_id", sa.String(255), nullable=True))
        op.add_column(table, sa.Column("forked_at", _INT64, nullable=True))
    for table in _ROWS:
        op.add_column(table, sa.Column("rolled_back", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    for table in _ROWS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("rolled_back")
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("forked_at")
            batch.drop_column("parent_id")
