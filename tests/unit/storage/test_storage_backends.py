"""The same models and the same Alembic chain on whichever backend the run uses (R-STORE-1): SQLite by default,
PostgreSQL in the CI pass (`ZEROCLAW_TEST_DATABASE_URL`, tests/db_backend.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.sessions.store.session_store import SessionStore
from app.storage import Database, create_engine
from app.storage.migrate import HEAD_REVISION, alembic_config, upgrade
from app.storage.models import Base

pytestmark = pytest.mark.req("R-STORE-1")


async def _on(url: str, fn: Any) -> Any:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(fn)
    finally:
        await engine.dispose()


def _drift(connection: sa.Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_the_migration_chain_builds_exactly_the_models(database_url: str) -> None:
    await asyncio.to_thread(upgrade, database_url)
    assert await _on(database_url, _drift) == []
    version = await _on(database_url, lambda c: c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar())
    assert version == HEAD_REVISION


async def test_the_chain_goes_down_to_nothing_and_up_again(database_url: str) -> None:
    def down() -> None:
        command.downgrade(alembic_config(database_url), "base")

    await asyncio.to_thread(upgrade, database_url)
    await asyncio.to_thread(down)
    tables = await _on(database_url, lambda c: set(sa.inspect(c).get_table_names()))
    assert tables <= {"alembic_version"}, tables
    await asyncio.to_thread(upgrade, database_url)
    assert await _on(database_url, _drift) == []


# Regression: PostgreSQL's INTEGER is 32-bit, and a `before` past 2**31 failed to bind (an internal error) where
# SQLite answered. The protocol allows up to 2**63 - 1 (rpc/methods/session.py).
@pytest.mark.parametrize("before", [2**31 - 1, 2**31, 2**63 - 1])
async def test_messages_before_takes_any_64_bit_bound(database_url: str, before: int) -> None:
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
        await store.transcript.append("s1", role="user", content="hi", turn_id="t1", surface="rpc")
        rows, total = await store.transcript.messages("s1", before=before)
        assert [row.content for row in rows] == ["hi"] and total == 1
    finally:
        await db.close()
