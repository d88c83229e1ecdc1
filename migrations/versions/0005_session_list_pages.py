"""`session/list` pages (R-MULTI-4): a title per session, and the keyset index the pages walk.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04

A page is `ORDER BY last_activity DESC, session_id DESC LIMIT n` after the previous page's last key, per owner or
everyone's: the indexes (owner, last_activity, session_id) and (last_activity, session_id), read backwards, give it
in that order, so a page reads its own rows and no others whatever the table holds. The first replaces the index
on owner alone, which it covers. `title` is the first prompt's first line (at most 80 characters) and
`title_fold` its `str.casefold()`, which a `query` matches on both backends alike; existing sessions get theirs
from their first user row, computed here exactly as `app.sessions.store.types.title_of` does at run time.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = (("acp_sessions", "acp_transcript"), ("chat_sessions", "chat_messages"))
_BATCH = 1000
# Frozen copies of store_types.TITLE_SCAN / TITLE_MAX: a migration states what it did when it ran.
_SCAN = 4096
_MAX = 80


def _title(prompt: str) -> str:
    return prompt[:_SCAN].lstrip().partition("\n")[0].strip()[:_MAX]


def upgrade() -> None:
    for table, rows in _TABLES:
        op.add_column(table, sa.Column("title", sa.String(80), nullable=True))
        op.add_column(table, sa.Column("title_fold", sa.String(320), nullable=True))
        op.drop_index(f"ix_{table}_owner", table)
        op.create_index(f"ix_{table}_owner_activity", table, ["owner", "last_activity", "session_id"])
        op.create_index(f"ix_{table}_activity", table, ["last_activity", "session_id"])
        _backfill(table, rows)


def _backfill(table: str, rows: str) -> None:
    """Each session's title from its first user row, in batches keyed by session id (bounded memory)."""
    bind = op.get_bind()
    first_prompts = sa.text(
        f"SELECT s.session_id, (SELECT substr(t.content, 1, {_SCAN}) FROM {rows} t "
        f"WHERE t.session_id = s.session_id AND t.role = 'user' ORDER BY t.idx LIMIT 1) "
        f"FROM {table} s WHERE s.session_id > :after ORDER BY s.session_id LIMIT {_BATCH}"
    )
    update = sa.text(f"UPDATE {table} SET title = :title, title_fold = :fold WHERE session_id = :sid")
    after = ""
    while batch := bind.execute(first_prompts, {"after": after}).all():
        after = batch[-1][0]
        titles = [
            {"sid": sid, "title": title, "fold": title.casefold()}
            for sid, prompt in batch
            if prompt is not None
            for title in (_title(prompt),)
        ]
        if titles:
            bind.execute(update, titles)


def downgrade() -> None:
    for table, _rows in _TABLES:
        op.drop_index(f"ix_{table}_activity", table)
        op.drop_index(f"ix_{table}_owner_activity", table)
        op.create_index(f"ix_{table}_owner", table, ["owner"])
        with op.batch_alter_table(table) as batch:
            batch.drop_column("title_fold")
            batch.drop_column("title")
