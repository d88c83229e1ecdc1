"""`permission_rules`: allow rules remembered for a principal and agent (R-GUARD-3, `allow_always` with
`remember:"agent"`).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05

Types are spelled out so this revision stays as it was. docs/security.md describes the rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "permission_rules",
        sa.Column("rule_id", sa.String(length=32), nullable=False),
        sa.Column("principal", sa.String(length=255), nullable=False),
        sa.Column("agent_alias", sa.String(length=255), nullable=False),
        sa.Column("decision", sa.String(length=8), nullable=False),
        sa.Column("pattern", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("decision IN ('allow', 'ask', 'deny')", name=op.f("ck_permission_rules_decision")),
        sa.PrimaryKeyConstraint("rule_id", name=op.f("pk_permission_rules")),
    )
    op.create_index("ix_permission_rules_principal_agent", "permission_rules", ["principal", "agent_alias"])


def downgrade() -> None:
    op.drop_index("ix_permission_rules_principal_agent", table_name="permission_rules")
    op.drop_table("permission_rules")
