"""Partial indexes on what is still open: incomplete transcript rows and unfinished turns (R-ACP-4, R-ACP-5).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Ending a turn flags its rows complete, and recovery looks for incomplete rows and unfinished turns. Keyed by the
session alone, both read every row the session ever had, so a turn cost more the longer its session (about 0.1 ms
per 1,000 rows on SQLite). Only a turn still running has open rows, so these indexes stay a few entries per live
session however long the transcripts grow. SQLite and PostgreSQL both have partial indexes; each index's
condition is written exactly as the queries write it (`complete = false`, `finished_at IS NULL`), which is what
lets SQLite's planner use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OPEN_ROWS = {"sqlite_where": sa.text("complete = 0"), "postgresql_where": sa.text("complete = false")}
_OPEN_TURNS = {"sqlite_where": sa.text("finished_at IS NULL"), "postgresql_where": sa.text("finished_at IS NULL")}


def upgrade() -> None:
    op.create_index("ix_acp_transcript_open", "acp_transcript", ["session_id", "turn_id"], **_OPEN_ROWS)
    op.create_index("ix_chat_messages_open", "chat_messages", ["session_id", "turn_id"], **_OPEN_ROWS)
    op.create_index("ix_acp_turns_open", "acp_turns", ["session_id"], **_OPEN_TURNS)


def downgrade() -> None:
    op.drop_index("ix_acp_turns_open", "acp_turns")
    op.drop_index("ix_chat_messages_open", "chat_messages")
    op.drop_index("ix_acp_transcript_open", "acp_transcript")
