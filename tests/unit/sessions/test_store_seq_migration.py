"""Migration 0007 (`seq`, R-MULTI-1) over a database made at 0006, as the previous release left it.

Both backends (tests/db_backend.py): the sessions come through intact and number their updates from 0, a
reservation only ever raises the stored seq, the exact value replaces only the reservation it was made under, and
a downgrade back to 0006 keeps every session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic import command
from db_backend import execute, query
from old_schema import insert_session

from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import HEAD_REVISION, alembic_config, upgrade

pytestmark = [pytest.mark.req("R-MULTI-1"), pytest.mark.req("R-STORE-2")]


async def _at_0006(url: str, workspace: Path) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(url), "0006")
    db = await Database.open(url)
    try:
        store = SessionStore(db)
        insert_session(url, "c1", owner="alice", workspace_dir=workspace, mode="chat")
        insert_session(url, "a1", owner="bob", workspace_dir=workspace)
        for n in range(5):
            for mode, sid in (("chat", "c1"), ("acp", "a1")):
                await store.transcript.append(
                    sid, mode=mode, role="user", content=f"q{n}", turn_id=f"t{n}", surface="rpc"
                )
                await store.transcript.append(
                    sid, mode=mode, role="assistant", content=f"a{n}", turn_id=f"t{n}", surface="rpc"
                )
                await store.transcript.finish_turn(sid, f"t{n}", "end_turn", mode=mode)
    finally:
        await db.close()
    # closed as that release closed it (today's store would read the new column)
    await asyncio.to_thread(execute, url, "UPDATE chat_sessions SET closed_at = last_activity")


@pytest.fixture
async def upgraded(tmp_path: Path, database_url: str) -> AsyncIterator[SessionStore]:
    await _at_0006(database_url, tmp_path)
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        yield SessionStore(db)
    finally:
        await db.close()


async def test_a_0006_database_upgrades_with_its_sessions_numbered_from_zero(
    upgraded: SessionStore, database_url: str
) -> None:
    assert query(database_url, "SELECT version_num FROM alembic_version") == [(HEAD_REVISION,)]
    for sid, mode in (("c1", "chat"), ("a1", "acp")):
        rows, total = await upgraded.transcript.messages(sid, mode=mode, limit=100)
        assert total == 10 and [r.content for r in rows] == [f"{k}{n}" for n in range(5) for k in ("q", "a")]
        assert await upgraded.seq(sid, mode=mode) == 0
    record = await upgraded.get("c1", mode="chat")
    assert record is not None and record.closed and record.owner == "alice" and record.title == "q0"
    page = await upgraded.lists.list(None)
    assert {r.session_id for r in page} == {"c1", "a1"}


async def test_a_reservation_only_raises_and_the_exact_seq_replaces_only_its_own(upgraded: SessionStore) -> None:
    await upgraded.store_seq("a1", 4096)
    await upgraded.store_seq("a1", 100)  # a late, lower reservation never lowers it
    assert await upgraded.seq("a1") == 4096
    await upgraded.store_seq("a1", 37, reserved=5000)  # made under another reservation: left alone
    assert await upgraded.seq("a1") == 4096
    await upgraded.store_seq("a1", 37, reserved=4096)
    assert await upgraded.seq("a1") == 37
    assert await upgraded.seq("a1", mode="chat") == 0  # another table, another session
    assert await upgraded.seq("nobody") == 0


async def test_a_downgrade_to_0006_keeps_every_session(upgraded: SessionStore, database_url: str) -> None:
    await upgraded.store_seq("a1", 12)
    await asyncio.to_thread(command.downgrade, alembic_config(database_url), "0006")
    assert query(database_url, "SELECT count(*) FROM acp_transcript") == [(10,)]
    assert query(database_url, "SELECT count(*) FROM chat_messages") == [(10,)]
    assert query(database_url, "SELECT session_id FROM acp_sessions") == [("a1",)]
    await asyncio.to_thread(upgrade, database_url)
    assert query(database_url, "SELECT seq FROM acp_sessions") == [(0,)]
