"""Retained-context snapshots for chat sessions (R-MULTI-5): `chat_snapshots`, shaped as `acp_snapshots`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04

A chat session's provider context is trimmed as an ACP session's is (R-ACP-1/2), so it needs the same record of
what the model keeps. A separate table, not `acp_snapshots`: that one's key refers to `acp_sessions`, and an ACP
and a chat session may share an id (R-ACP-10). Existing chat sessions get no snapshot; their first turn trims them
(docs/durability.md, "Trimming"). Types are spelled out so this revision stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SURFACE_CHECK = "interaction_surface IN ('rpc', 'gateway')"
# 64-bit as every counter is since 0003: BIGINT on PostgreSQL, INTEGER (already 64-bit) on SQLite.
_INT64 = sa.Integer().with_variant(sa.BigInteger(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "chat_snapshots",
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("snapshot_id", _INT64, nullable=False),
        sa.Column("messages", sa.Text(), nullable=False),
        sa.Column("boundary", _INT64, nullable=False),
        sa.Column("interaction_surface", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(_SURFACE_CHECK, name=op.f("ck_chat_snapshots_surface")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["chat_sessions.session_id"],
            name=op.f("fk_chat_snapshots_session_id_chat_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "snapshot_id", name=op.f("pk_chat_snapshots")),
    )


def downgrade() -> None:
    op.drop_table("chat_snapshots")
