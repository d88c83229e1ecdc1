"""The store's list cache (app/sessions/store_lists.py) never differs from a fresh read (R-ACP-8, R-ACP-9).

Random sequences of the store's writes, with lists read in between (which fill the cache) and injected faults,
compare every `list()` with one made by a store that has never cached anything, on the same database.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from cancelled_write import append_cancelled_mid_write
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.sessions.errors import SessionClosed, SessionKilled, SessionNotOwned
from app.sessions.store import SessionStore
from app.storage import Database
from app.storage.faults import StorageFault
from app.storage.models import Base

SIDS = ("s1", "s2", "s3")
OWNERS = ("o1", "o2")

sid = st.sampled_from(SIDS)
mode = st.sampled_from(["acp", "chat"])
op = st.one_of(
    st.tuples(st.just("create"), sid, st.sampled_from(OWNERS), mode),
    st.tuples(st.just("append"), sid, mode),
    st.tuples(st.just("touch"), sid, mode),
    st.tuples(st.just("close"), sid, mode),
    st.tuples(st.just("kill"), sid, mode),
    st.tuples(st.just("delete"), sid, mode),
    st.tuples(st.just("list"), st.sampled_from([None, *OWNERS]), st.booleans()),
    st.tuples(st.just("fault"), st.sampled_from(["create", "append", "touch", "close", "kill", "delete"])),
)


async def _database(url: str = "sqlite+aiosqlite://") -> Database:
    db = await Database.open(url)
    await db.write(lambda s: Base.metadata.create_all(s.connection()))
    return db


async def _check(store: SessionStore, db: Database) -> None:
    fresh = SessionStore(db)
    for owner in (None, *OWNERS):
        for killed in (False, True):
            assert await store.list(owner, include_killed=killed) == await fresh.list(owner, include_killed=killed)


async def _run(ops: list[tuple[Any, ...]]) -> None:
    db = await _database()
    try:
        store = SessionStore(db)
        turn = 0
        for item in ops:
            kind = item[0]
            try:
                if kind == "create":
                    _, session, owner, chosen = item
                    await store.create(session, owner=owner, agent_alias="default", workspace_dir="/w", mode=chosen)
                elif kind == "append":
                    turn += 1
                    await store.append(
                        item[1], role="user", content="hi", turn_id=f"t{turn}", surface="rpc", mode=item[2]
                    )
                elif kind in ("touch", "close", "kill", "delete"):
                    await getattr(store, kind)(item[1], mode=item[2])
                elif kind == "list":
                    await store.list(item[1], include_killed=item[2])
                elif kind == "fault":
                    store.faults.arm(item[1])
            except (ValueError, LookupError, StorageFault, SessionKilled, SessionClosed, SessionNotOwned):
                pass  # refused or failed: the cache must know what did or did not change
            await _check(store, db)
    finally:
        await db.close()


@given(st.lists(op, max_size=30))
@example([("create", "s1", "o1", "acp"), ("list", None, False), ("append", "s1", "acp"), ("list", None, False)])
@example([("create", "s1", "o1", "acp"), ("list", "o1", False), ("kill", "s1", "acp"), ("list", "o1", True)])
@example([("create", "s1", "o1", "chat"), ("list", None, True), ("fault", "close"), ("close", "s1", "chat")])
@settings(max_examples=150, deadline=None)
def test_cached_lists_equal_a_fresh_read(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_run(ops))


def test_a_repeated_list_is_not_read_again_until_a_write() -> None:
    async def run() -> None:
        db = await _database()
        try:
            store = SessionStore(db)
            await store.create("s1", owner="o", agent_alias="default", workspace_dir="/w")
            reads: list[object] = []
            unit = store._list_unit
            store._list_unit = lambda *args: reads.append(args) or unit(*args)  # type: ignore[method-assign]
            first = await store.list(None)
            assert await store.list(None) == first and len(reads) == 1
            await store.touch("s1")
            assert (await store.list(None))[0].last_activity > first[0].last_activity and len(reads) == 2
        finally:
            await db.close()

    asyncio.run(run())


def test_a_list_read_racing_a_write_does_not_fill_the_cache_with_what_the_write_changed(tmp_path: Path) -> None:
    # A database file, so reads run on reader threads beside the writer. The read is held until the write
    # committed: what it read is stale, and the next list must not be answered with it.
    started, release = threading.Event(), threading.Event()

    async def run() -> None:
        db = await _database(f"sqlite+aiosqlite:///{tmp_path / 'z.db'}")
        try:
            store = SessionStore(db)
            await store.create("s1", owner="o", agent_alias="default", workspace_dir="/w")
            unit = store._list_unit

            def held(*args: Any) -> Any:
                records = unit(*args)
                started.set()
                assert release.wait(10)
                return records

            store._list_unit = held  # type: ignore[method-assign]
            read = asyncio.ensure_future(store.list(None))
            assert await asyncio.to_thread(started.wait, 10)
            store._list_unit = unit  # type: ignore[method-assign]
            await store.kill("s1")  # committed while the read still holds its snapshot
            release.set()
            stale = await read
            assert [r.killed for r in stale] == [False]
            assert await store.list(None) == []  # the killed session is gone from the default list
        finally:
            await db.close()

    asyncio.run(asyncio.wait_for(run(), 20))


def test_a_write_whose_caller_was_cancelled_still_empties_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> None:
        db = await _database()
        try:
            store = SessionStore(db)
            await store.create("s1", owner="o", agent_alias="default", workspace_dir="/w")
            assert [r.message_count for r in await store.list(None)] == [0]  # cached
            await append_cancelled_mid_write(store, db, monkeypatch, "s1")
            assert [r.message_count for r in await store.list(None)] == [1]
        finally:
            await db.close()

    asyncio.run(run())
