"""Fixtures the unit suites share: a migrated database and a `SessionStore` on it (SQLite, or PostgreSQL in the
CI pass: `database_url`, tests/conftest.py). A module that needs sessions stored first overrides `store` with a
fixture of the same name that takes this one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.faults import Faults
from app.storage.migrate import upgrade


@pytest.fixture
async def db_url(database_url: str) -> str:
    """`database_url`, migrated to the newest schema."""
    await asyncio.to_thread(upgrade, database_url)
    return database_url


@pytest.fixture
def faults() -> Faults:
    """The store's fault points (`app.storage.faults`), none armed."""
    return Faults()


@pytest.fixture
async def store(db_url: str, faults: Faults) -> AsyncIterator[SessionStore]:
    db = await Database.open(db_url)
    try:
        yield SessionStore(db, faults=faults)
    finally:
        await db.close()
