"""Migration 0011 (`parent_id`, `forked_at`, R-BRANCH-1) over a database made at 0010, on both backends: the sessions
come through as no fork, can be forked, and a downgrade back to 0010 keeps every session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from db_backend import query
from old_schema import insert_session

from app.sessions.mode import SessionMode
from app.sessions.store.forks import ForkRequest
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import alembic_config, upgrade

pytestmark = [pytest.mark.req("R-BRANCH-1"), pytest.mark.req("R-STORE-2")]


async def test_a_0010_database_upgrades_forks_and_downgrades(tmp_path: Path, database_url: str) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "0010")
    insert_session(database_url, "a1", owner="bob", workspace_dir=tmp_path)
    insert_session(database_url, "c1", owner="bob", workspace_dir=tmp_path, mode="chat")
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        old = await store.get("a1")
        assert old is not None and (old.parent_id, old.forked_at) == (None, None)
        await store.forks.fork(ForkRequest(SessionMode.CHAT, "c1", "c2", "bob"))
        child = await store.get("c2", mode=SessionMode.CHAT)
        assert child is not None and (child.parent_id, child.forked_at) == ("c1", 0)
    finally:
        await db.close()
    await asyncio.to_thread(command.downgrade, alembic_config(database_url), "0010")
    assert query(database_url, "SELECT count(*) FROM chat_sessions") == [(2,)]
