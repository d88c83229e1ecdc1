"""Migration 0006 (`chat_snapshots`, R-MULTI-5) over a database at 0005 that holds chat and ACP sessions.

Both backends (tests/db_backend.py): the sessions come through intact, a stored chat has no snapshot until its
first turn trims it, and a downgrade back to 0005 drops only the new table.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic import command
from db_backend import query
from old_schema import insert_session

from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import HEAD_REVISION, alembic_config, upgrade

pytestmark = [pytest.mark.req("R-MULTI-5"), pytest.mark.req("R-STORE-2")]


async def _at_0005(url: str, workspace: Path) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(url), "0005")
    db = await Database.open(url)
    try:
        store = SessionStore(db)
        insert_session(url, "c1", owner="alice", workspace_dir=workspace, mode="chat")
        insert_session(url, "a1", owner="alice", workspace_dir=workspace)
        for n in range(10):
            for mode, sid in (("chat", "c1"), ("acp", "a1")):
                await store.transcript.append(
                    sid, mode=mode, role="user", content=f"q{n}", turn_id=f"t{n}", surface="rpc"
                )
                await store.transcript.append(
                    sid, mode=mode, role="assistant", content=f"a{n}", turn_id=f"t{n}", surface="rpc"
                )
        await store.transcript.save_snapshot("a1", [{"role": "user", "content": "acp kept"}], 19)
    finally:
        await db.close()


@pytest.fixture
async def upgraded(tmp_path: Path, database_url: str) -> AsyncIterator[SessionStore]:
    await _at_0005(database_url, tmp_path)
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        yield SessionStore(db)
    finally:
        await db.close()


async def test_an_upgrade_from_0005_keeps_chat_sessions_without_a_snapshot(
    upgraded: SessionStore, database_url: str
) -> None:
    assert query(database_url, "SELECT version_num FROM alembic_version") == [(HEAD_REVISION,)]
    rows, total = await upgraded.transcript.messages("c1", mode="chat", limit=100)
    assert total == 20 and [r.content for r in rows] == [f"{k}{n}" for n in range(10) for k in ("q", "a")]
    record = await upgraded.get("c1", mode="chat")
    assert record is not None and record.title == "q0" and record.message_count == 20
    context = await upgraded.transcript.context("c1", mode="chat")
    assert (context.snapshot_id, len(context.messages)) == (None, 20)  # trimmed by its next turn
    assert (await upgraded.transcript.context("a1")).messages == [{"role": "user", "content": "acp kept"}]
    # the new table takes the chat's first snapshot
    assert await upgraded.transcript.save_snapshot("c1", [{"role": "user", "content": "q9"}], 19, mode="chat") == 1
    assert (await upgraded.transcript.context("c1", mode="chat")).messages == [{"role": "user", "content": "q9"}]


async def test_a_downgrade_to_0005_drops_only_the_chat_snapshots(upgraded: SessionStore, database_url: str) -> None:
    await upgraded.transcript.save_snapshot("c1", [], 19, mode="chat")
    await asyncio.to_thread(command.downgrade, alembic_config(database_url), "0005")
    assert query(database_url, "SELECT count(*) FROM chat_messages") == [(20,)]
    assert query(database_url, "SELECT count(*) FROM acp_snapshots") == [(1,)]
    tables = query(
        database_url,
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'chat_snapshots'"
        if not database_url.startswith("sqlite")
        else "SELECT count(*) FROM sqlite_master WHERE name = 'chat_snapshots'",
    )
    assert tables == [(0,)]
