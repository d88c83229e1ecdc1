"""Durable sessions: ACP sessions, transcript, turns, snapshots; chat sessions and messages (R-ACP).

Revision ID: 0002
Revises: 0001
Create Date: 2024-12-01

Types are spelled out here, not imported from the models, so this revision stays as it was when later models
change. docs/sessions-storage.md describes the tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SURFACE_CHECK = "interaction_surface IN ('rpc', 'gateway')"
_ROLE_CHECK = "role IN ('user', 'assistant', 'thought', 'tool_call', 'tool_result', 'marker')"


def _session_table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("agent_alias", sa.String(length=255), nullable=False),
        sa.Column("workspace_dir", sa.Text(), nullable=False),
        sa.Column("interaction_surface", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_activity", sa.DateTime(), nullable=False),
        sa.Column("closed_at", sa.DateTime(), nullable=True),
        sa.Column("killed_at", sa.DateTime(), nullable=True),
        sa.Column("next_index", sa.Integer(), nullable=False),
        sa.CheckConstraint(_SURFACE_CHECK, name=op.f(f"ck_{name}_surface")),
        sa.PrimaryKeyConstraint("session_id", name=op.f(f"pk_{name}")),
    )
    op.create_index(op.f(f"ix_{name}_owner"), name, ["owner"], unique=False)


def _row_table(name: str, parent: str) -> None:
    op.create_table(
        name,
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=255), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("marker", sa.String(length=32), nullable=True),
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("interaction_surface", sa.String(length=16), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(_ROLE_CHECK, name=op.f(f"ck_{name}_role")),
        sa.CheckConstraint(_SURFACE_CHECK, name=op.f(f"ck_{name}_surface")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            [f"{parent}.session_id"],
            name=op.f(f"fk_{name}_session_id_{parent}"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "idx", name=op.f(f"pk_{name}")),
    )


def upgrade() -> None:
    _session_table("acp_sessions")
    _session_table("chat_sessions")
    _row_table("acp_transcript", "acp_sessions")
    _row_table("chat_messages", "chat_sessions")
    op.create_table(
        "acp_turns",
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("interaction_surface", sa.String(length=16), nullable=False),
        sa.Column("first_index", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("stop_reason", sa.String(length=32), nullable=True),
        sa.CheckConstraint(_SURFACE_CHECK, name=op.f("ck_acp_turns_surface")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["acp_sessions.session_id"],
            name=op.f("fk_acp_turns_session_id_acp_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "turn_id", name=op.f("pk_acp_turns")),
    )
    op.create_table(
        "acp_snapshots",
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("snapshot_id", sa.Integer(), nullable=False),
        sa.Column("messages", sa.Text(), nullable=False),
        sa.Column("boundary", sa.Integer(), nullable=False),
        sa.Column("interaction_surface", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(_SURFACE_CHECK, name=op.f("ck_acp_snapshots_surface")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["acp_sessions.session_id"],
            name=op.f("fk_acp_snapshots_session_id_acp_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "snapshot_id", name=op.f("pk_acp_snapshots")),
    )


def downgrade() -> None:
    op.drop_table("acp_snapshots")
    op.drop_table("acp_turns")
    op.drop_table("chat_messages")
    op.drop_table("acp_transcript")
    op.drop_index(op.f("ix_chat_sessions_owner"), table_name="chat_sessions")
    op.drop_table("chat_sessions")
    op.drop_index(op.f("ix_acp_sessions_owner"), table_name="acp_sessions")
    op.drop_table("acp_sessions")
