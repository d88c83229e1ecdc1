"""`app.storage.copy` (`zeroclaw db copy`): all rows or none, never into a database that holds rows (R-STORE-1).

The source is a SQLite file; the target is the backend under test (tests/db_backend.py). The whole path through a
real daemon on both sides is `tests/e2e/test_e2e_db_copy.py`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import db_backend
import pytest

from app.agents.permissions.store import PermissionStore
from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import UsageRecord
from app.storage import Database, copy
from app.storage.migrate import upgrade

pytestmark = pytest.mark.req("R-STORE-1")


async def _filled_sqlite(tmp_path: Path) -> str:
    url = db_backend.default_url(tmp_path / "source")
    (tmp_path / "source").mkdir()
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    try:
        store = SessionStore(db)
        await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
        await store.transcript.append("s1", role="user", content="hi", turn_id="t1", surface="rpc")
        await store.transcript.append("s1", role="assistant", content="Hello", turn_id="t1", surface="rpc")
        spent = UsageRecord("t1", "p", "m", 1, 3, 1, 0, 0, 0.5)
        await store.transcript.finish_turn("s1", "t1", "end_turn", usage=spent)
        await PermissionStore(db).add("alice", "default", "allow", "bash(git status*)")  # R-GUARD-3's table
    finally:
        await db.close()
    return url


def _counts(url: str) -> dict[str, int]:
    return {t.name: db_backend.query(url, f"SELECT count(*) FROM {t.name}")[0][0] for t in copy._tables()}


async def test_every_row_arrives_and_a_second_copy_is_refused(tmp_path: Path, database_url: str) -> None:
    source = await _filled_sqlite(tmp_path)
    result = await copy.copy_database(source, database_url)
    assert result.rows == _counts(source) == _counts(database_url)
    assert result.rows["acp_transcript"] == 2 and result.rows["acp_sessions"] == 1
    assert result.rows["permission_rules"] == 1
    assert result.rows["acp_turn_usage"] == 1  # what the turns cost travels too (R-MODEL-5)
    with pytest.raises(copy.CopyError, match="is not empty"):
        await copy.copy_database(source, database_url)
    assert _counts(database_url) == result.rows


async def test_a_copy_that_fails_half_way_leaves_the_target_empty(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await _filled_sqlite(tmp_path)
    real = copy._copy_table
    done: list[str] = []

    async def failing(src: Any, dst: Any, table: Any) -> int:
        if table.name == "acp_transcript":  # after acp_sessions has been written
            raise RuntimeError("the disk went away")
        done.append(table.name)
        return await real(src, dst, table)

    monkeypatch.setattr(copy, "_copy_table", failing)
    with pytest.raises(RuntimeError, match="went away"):
        await copy.copy_database(source, database_url)
    assert "acp_sessions" in done
    assert set(_counts(database_url).values()) == {0}


async def test_the_same_database_on_both_sides_is_refused(tmp_path: Path) -> None:
    url = db_backend.default_url(tmp_path)
    with pytest.raises(copy.CopyError, match="same database"):
        await copy.copy_database(url, url)


async def test_a_missing_sqlite_source_is_refused_not_created(tmp_path: Path, database_url: str) -> None:
    missing = tmp_path / "typo" / "zeroclaw.db"
    (tmp_path / "typo").mkdir()
    with pytest.raises(copy.CopyError, match="no database at"):
        await copy.copy_database(db_backend.default_url(missing.parent), database_url)
    assert not missing.exists()
