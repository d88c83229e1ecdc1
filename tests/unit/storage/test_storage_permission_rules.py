"""Remembered permission rules on the database (R-GUARD-3): add (once), list per principal and agent, delete;
SQLite here, PostgreSQL in the CI pass (`database_url`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.agents.permissions.store import PermissionStore
from app.storage import Database

pytestmark = pytest.mark.req("R-GUARD-3")


@pytest.fixture
async def rules(db_url: str) -> AsyncIterator[PermissionStore]:
    db = await Database.open(db_url)
    try:
        yield PermissionStore(db)
    finally:
        await db.close()


async def test_add_list_delete(rules: PermissionStore) -> None:
    first = await rules.add("owner", "default", "allow", "bash(git status*)")
    again = await rules.add("owner", "default", "allow", "bash(git status*)")
    assert again.rule_id == first.rule_id  # the same rule is stored once
    other_agent = await rules.add("owner", "coder", "allow", "bash(ls *)")
    other_user = await rules.add("user:bob", "default", "allow", "write_file(src/**)")
    assert [r.pattern for r in await rules.list("owner", "default")] == ["bash(git status*)"]
    assert {r.rule_id for r in await rules.list("owner")} == {first.rule_id, other_agent.rule_id}
    assert {r.rule_id for r in await rules.list()} == {first.rule_id, other_agent.rule_id, other_user.rule_id}
    stored = await rules.get(first.rule_id)
    assert stored is not None and stored.rule().decision == "allow" and stored.rule().source.endswith(first.rule_id)
    assert await rules.delete(first.rule_id)
    assert not await rules.delete(first.rule_id)
    assert await rules.get(first.rule_id) is None
    assert await rules.list("owner", "default") == []
