"""Revision 0005 (R-MULTI-4): a database made at 0004, by today's release, upgrades with its sessions intact, each
titled from its first user row, and lists in pages from the new index."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import create_async_engine

from app.sessions.list_pages import ListQuery
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.engine import default_url
from app.storage.migrate import alembic_config, upgrade
from app.storage.types import UTCDateTime

ROW = "INSERT INTO {} VALUES (:sid, :idx, :role, :content, NULL, NULL, NULL, 't', 'rpc', :done, :at)"
SESSION = "INSERT INTO {} VALUES (:sid, :owner, 'default', '/w', 'rpc', :at, :at, :closed, :killed, :count)"


def _times(*names: str) -> list[sa.BindParameter[datetime]]:
    """Times stored as the release stores them (its column type), on either backend."""
    return [sa.bindparam(name, type_=UTCDateTime()) for name in names]


async def _seed_at_0004(url: str) -> None:
    """30 sessions per table as release 0004 stored them: some closed, killed, or never prompted."""
    await asyncio.to_thread(command.upgrade, alembic_config(url), "0004")  # Alembic runs its own loop
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            for table, rows in (("acp_sessions", "acp_transcript"), ("chat_sessions", "chat_messages")):
                for n in range(30):
                    at = datetime(2026, 11, 1 + n % 28, 10, 0, n, tzinfo=UTC)
                    closed = at if n % 5 == 0 else None
                    killed = at if n % 7 == 0 else None
                    prompts = [] if n % 3 == 0 else [f"\n  Question {n} of {table}  \nsecond line", "later"]
                    await conn.execute(
                        sa.text(SESSION.format(table)).bindparams(*_times("at", "closed", "killed")),
                        {"sid": f"s{n:02d}", "owner": f"o{n % 2}", "at": at, "closed": closed,
                         "killed": killed, "count": 2 * len(prompts)},
                    )  # fmt: skip
                    for i, prompt in enumerate(prompts):
                        for idx, role, content in ((2 * i, "user", prompt), (2 * i + 1, "assistant", "ok")):
                            await conn.execute(
                                sa.text(ROW.format(rows)).bindparams(*_times("at")),
                                {"sid": f"s{n:02d}", "idx": idx, "role": role, "content": content, "at": at,
                                 "done": True},
                            )  # fmt: skip
    finally:
        await engine.dispose()


@pytest.mark.req("R-MULTI-4")
async def test_a_0004_database_upgrades_with_its_sessions_titled_and_pages(database_url: str) -> None:
    url = database_url
    await _seed_at_0004(url)
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    try:
        store = SessionStore(db)
        everyone = await store.lists.list(None, include_killed=True)
        assert len(everyone) == 60  # every session of both tables, closed chat ones included
        by_key = {(r.session_id, r.mode): r for r in everyone}
        for n in range(30):
            for mode, table in (("acp", "acp_sessions"), ("chat", "chat_sessions")):
                record = by_key[f"s{n:02d}", mode]
                assert record.title == (None if n % 3 == 0 else f"Question {n} of {table}")
                assert (record.closed, record.killed, record.owner) == (n % 5 == 0, n % 7 == 0, f"o{n % 2}")
                assert record.message_count == (0 if n % 3 == 0 else 4)
        # newest activity first, then id; walked in pages of 7 it is the same list, each session once
        keys = [(r.last_activity, r.session_id, r.mode) for r in everyone]
        assert keys == sorted(keys, reverse=True)
        query = ListQuery("o1", include_killed=False, query="question 1")
        expected = [r for r in everyone if query.shows(r)]
        assert expected and all(r.title and "question 1" in r.title.casefold() for r in expected)
        walked, after = [], None
        while True:
            page = await store.lists.page(query, after, 7)
            walked += page.records
            if (after := page.last) is None:
                break
        assert walked == expected
        # a new prompt titles an untitled session; a later one does not change a title
        await store.transcript.append("s03", role="user", content="Fresh start", turn_id="t9", surface="rpc")
        await store.transcript.append("s04", role="user", content="Not the title", turn_id="t9", surface="rpc")
        fresh = SessionStore(db)
        titles = [(await fresh.get(sid)).title for sid in ("s03", "s04")]  # type: ignore[union-attr]
        assert titles == ["Fresh start", "Question 4 of acp_sessions"]
        assert (await store.lists.page(ListQuery("o1", query="FRESH"), None, 5)).records[0].session_id == "s03"
    finally:
        await db.close()


def test_0005_downgrades_to_0004_and_back(tmp_path: Path) -> None:
    url = default_url(tmp_path)
    asyncio.run(_seed_at_0004(url))
    upgrade(url)
    command.downgrade(alembic_config(url), "0004")
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'zeroclaw.db'}")
    try:
        with engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("acp_sessions")}
            assert "title" not in columns and conn.exec_driver_sql("SELECT count(*) FROM acp_sessions").scalar() == 30
    finally:
        engine.dispose()
    upgrade(url)
