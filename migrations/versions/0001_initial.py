"""Initial schema: pairing tokens (R-AUTH-4).

Revision ID: 0001
Revises:
Create Date: 2024-11-30

Types are spelled out here, not imported from the models, so this revision stays as it was when later models
change. Session tables come in later revisions.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pairing_tokens",
        sa.Column("token_id", sa.String(length=32), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("label", sa.Text(), nullable=True),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_id", name=op.f("pk_pairing_tokens")),
        sa.UniqueConstraint("token_sha256", name=op.f("uq_pairing_tokens_token_sha256")),
    )


def downgrade() -> None:
    op.drop_table("pairing_tokens")
