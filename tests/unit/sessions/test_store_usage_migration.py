"""Migration 0010 (what each turn cost, R-MODEL-5) over a database made at 0009, on both backends: the sessions come
through with no counted turn (their cost was never counted), new turns are counted from 0, and a downgrade back to
0009 drops only the two usage tables."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from db_backend import execute, query
from old_schema import insert_session

from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import UsageRecord
from app.storage import Database
from app.storage.migrate import alembic_config, upgrade

pytestmark = [pytest.mark.req("R-MODEL-5"), pytest.mark.req("R-STORE-2")]


async def test_a_0009_database_upgrades_counts_new_turns_and_downgrades(tmp_path: Path, database_url: str) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "0009")
    # Today's store reads columns 0009 lacks (`parent_id` of 0011): the old turn is stored as SQL.
    insert_session(database_url, "a1", owner="bob", workspace_dir=tmp_path)
    execute(
        database_url,
        "INSERT INTO acp_transcript (session_id, idx, role, content, turn_id, interaction_surface, complete, "
        "created_at) SELECT session_id, 0, 'user', 'q', 't0', 'rpc', true, created_at FROM acp_sessions",
    )
    execute(database_url, "UPDATE acp_sessions SET next_index = 1")

    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        assert await store.usage.turns("a1") == []
        await store.transcript.append("a1", role="user", content="q", turn_id="t1", surface="rpc")
        await store.transcript.finish_turn(
            "a1", "t1", "end_turn", usage=UsageRecord("t1", "p", "m", 1, 5, 2, 0, 0, 0.1)
        )
        [turn] = await store.usage.turns("a1")
        assert (turn.index, turn.turn_id, turn.input_tokens) == (0, "t1", 5)
    finally:
        await db.close()

    await asyncio.to_thread(command.downgrade, alembic_config(database_url), "0009")
    assert query(database_url, "SELECT count(*) FROM acp_transcript")[0][0] == 2
    with pytest.raises(Exception):  # noqa: B017 (either driver's "no such table")
        query(database_url, "SELECT count(*) FROM acp_turn_usage")
