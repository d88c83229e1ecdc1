"""Per-session settings on both session tables (R-MODEL-4): the model and temperature chosen by `session/configure`.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

`session/configure` (and ACP's `session/set_model` / `session/set_config_option`) overrides a session's model and
temperature; the agent switch is the existing `agent_alias` column. Both are NULL until a client chooses one: the
agent's own settings then apply. Types are spelled out so this revision stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("acp_sessions", "chat_sessions")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("model", sa.String(255), nullable=True))
        op.add_column(table, sa.Column("temperature", sa.Float(), nullable=True))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("temperature")
            batch.drop_column("model")
