"""What each turn cost (R-MODEL-5): `acp_turn_usage` and `chat_turn_usage`, one row per finished turn.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05

A turn's provider steps summed: tokens (input, output, cache read, cache write), its cost in USD (NULL when the
provider is unpriced), the provider alias and model it ran on, and its number in the session (`idx`, from 0), which
`session/usage` lists. One table per mode, as the transcripts are: a key refers to its own session table, and an ACP
and a chat session may share an id (R-ACP-10). Turns before this revision have no row: their cost was never counted.
Types are spelled out so this revision stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 64-bit as every counter is since 0003: BIGINT on PostgreSQL, INTEGER (already 64-bit) on SQLite.
_INT64 = sa.Integer().with_variant(sa.BigInteger(), "postgresql")
_TABLES = (("acp_turn_usage", "acp_sessions"), ("chat_turn_usage", "chat_sessions"))


def upgrade() -> None:
    for table, sessions in _TABLES:
        op.create_table(
            table,
            sa.Column("session_id", sa.String(length=255), nullable=False),
            sa.Column("idx", _INT64, nullable=False),
            sa.Column("turn_id", sa.String(length=64), nullable=False),
            sa.Column("provider", sa.String(length=255), nullable=False),
            sa.Column("model", sa.String(length=255), nullable=True),
            sa.Column("steps", _INT64, nullable=False),
            sa.Column("input_tokens", _INT64, nullable=False),
            sa.Column("output_tokens", _INT64, nullable=False),
            sa.Column("cache_read_tokens", _INT64, nullable=False),
            sa.Column("cache_write_tokens", _INT64, nullable=False),
            sa.Column("cost_usd", sa.Float(), nullable=True),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.ForeignKeyConstraint(
                ["session_id"],
                [f"{sessions}.session_id"],
                name=op.f(f"fk_{table}_session_id_{sessions}"),
                ondelete="CASCADE",
            ),
            sa.PrimaryKeyConstraint("session_id", "idx", name=op.f(f"pk_{table}")),
        )


def downgrade() -> None:
    for table, _sessions in reversed(_TABLES):
        op.drop_table(table)
