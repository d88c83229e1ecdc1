"""Migration 0008 (`model`, `temperature`, R-MODEL-4) over a database made at 0007: the sessions come through with
no override (their agent's settings apply), take one, and a downgrade back to 0007 keeps every session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from db_backend import query
from old_schema import insert_session

from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import HEAD_REVISION, alembic_config, upgrade

pytestmark = [pytest.mark.req("R-MODEL-4"), pytest.mark.req("R-STORE-2")]


async def test_a_0007_database_upgrades_and_downgrades_with_its_sessions(tmp_path: Path, database_url: str) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "0007")
    insert_session(database_url, "c1", owner="alice", workspace_dir=tmp_path, mode="chat")
    insert_session(database_url, "a1", owner="bob", workspace_dir=tmp_path)
    await asyncio.to_thread(upgrade, database_url)
    assert query(database_url, "SELECT version_num FROM alembic_version") == [(HEAD_REVISION,)]
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        chat = await store.get("c1", mode="chat")
        assert chat is not None and (chat.agent_alias, chat.model, chat.temperature) == ("default", None, None)
        configured = await store.configure("a1", agent_alias="other", model="m-1", temperature=0.5)
        assert (configured.agent_alias, configured.model, configured.temperature) == ("other", "m-1", 0.5)
        assert [(r.session_id, r.model) for r in await store.lists.list(None)] == [("a1", "m-1"), ("c1", None)]
    finally:
        await db.close()
    await asyncio.to_thread(command.downgrade, alembic_config(database_url), "0007")
    assert query(database_url, "SELECT session_id, agent_alias FROM acp_sessions") == [("a1", "other")]
    assert query(database_url, "SELECT count(*) FROM chat_sessions") == [(1,)]
