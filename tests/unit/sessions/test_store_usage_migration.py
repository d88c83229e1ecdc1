"""Migration 0010 (what each turn cost, R-MODEL-5) over a database made at 0009, on both backends: the sessions come
through with no counted turn (their cost was never counted), new turns are counted from 0, and a downgrade back to
0009 drops only the two usage tables."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from db_backend import query

from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import UsageRecord
from app.storage import Database
from app.storage.migrate import alembic_config, upgrade

pytestmark = [pytest.mark.req("R-MODEL-5"), pytest.mark.req("R-STORE-2")]


async def test_a_0009_database_upgrades_counts_new_turns_and_downgrades(tmp_path: Path, database_url: str) -> None:
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "0009")
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        await store.create("a1", owner="bob", agent_alias="default", workspace_dir=tmp_path)
        await store.transcript.append("a1", role="user", content="q", turn_id="t0", surface="rpc")
        await store.transcript.finish_turn("a1", "t0", "end_turn")
    finally:
        await db.close()

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
