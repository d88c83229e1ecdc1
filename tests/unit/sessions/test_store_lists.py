"""The store's list cache (app/sessions/store/list_cache.py) never differs from a fresh read (R-ACP-8, R-ACP-9).

Random sequences of the store's writes (a turn's checkpoints among them, also two at once on one session and
racing a list read), with lists read in between (which fill the cache) and injected faults, compare every
`list()` with one made by a store that has never cached anything, on the same database.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cancelled_write import append_cancelled_mid_write
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.sessions.errors import SessionClosed, SessionKilled, SessionNotOwned
from app.sessions.list_pages import ListQuery
from app.sessions.store.list_cache import Activity, ListCache
from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import SessionRecord
from app.storage import Database
from app.storage.faults import StorageFault
from app.storage.migrate import upgrade
from app.storage.models import Base

T = TypeVar("T")

SIDS = ("s1", "s2", "s3")
OWNERS = ("o1", "o2")

FAULT_POINTS = (
    *("create", "append", "update_text", "finish_turn", "touch", "close", "kill", "delete", "reopen"),
    *("save_snapshot", "recover"),
)

sid = st.sampled_from(SIDS)
mode = st.sampled_from(["acp", "chat"])
op = st.one_of(
    st.tuples(st.just("create"), sid, st.sampled_from(OWNERS), mode),
    st.tuples(st.just("append"), sid, mode),
    st.tuples(st.just("update_text"), sid, mode),
    st.tuples(st.just("finish_turn"), sid, mode),
    st.tuples(st.just("overlap"), sid, mode),  # two checkpoints of one session at once, and a list read
    st.tuples(st.just("touch"), sid, mode),
    st.tuples(st.just("close"), sid, mode),
    st.tuples(st.just("kill"), sid, mode),
    st.tuples(st.just("delete"), sid, mode),
    st.tuples(st.just("reopen"), sid, mode),
    st.tuples(st.just("snapshot"), sid),
    st.tuples(st.just("recover"), sid),
    st.tuples(st.just("list"), st.sampled_from([None, *OWNERS]), st.booleans()),
    st.tuples(
        st.just("fault"),
        st.sampled_from(FAULT_POINTS),
    ),
)


async def _database(url: str = "sqlite+aiosqlite://") -> Database:
    db = await Database.open(url)
    await db.write(lambda s: Base.metadata.create_all(s.connection()))
    return db


async def _file_store(tmp_path: Path) -> tuple[Database, SessionStore]:
    """A database file (reads run on reader threads beside the writer) and a store with one session, "s1"."""
    db = await _database(f"sqlite+aiosqlite:///{tmp_path / 'z.db'}")
    store = SessionStore(db)
    await store.create("s1", owner="o", agent_alias="default", workspace_dir="/w")
    return db, store


async def _check(store: SessionStore, db: Database) -> None:
    fresh = SessionStore(db)
    for owner in (None, *OWNERS):
        for killed in (False, True):
            assert await store.lists.list(owner, include_killed=killed) == await fresh.lists.list(
                owner, include_killed=killed
            )
            # R-MULTI-4: a page of a kept list (any mode, title query, cursor) is the page a read answers
            for chosen, query in ((None, None), ("chat", None), (None, "HI 1")):
                listing = ListQuery(owner, killed, chosen, query)  # type: ignore[arg-type]
                after = None
                while True:
                    page = await store.lists.page(listing, after, 2)
                    assert page == await fresh.lists.page(listing, after, 2)
                    if (after := page.last) is None:
                        break


async def _run(ops: list[tuple[Any, ...]]) -> None:
    db = await _database()
    try:
        store = SessionStore(db)
        turn = 0

        async def append(session: str, chosen: str) -> int:
            nonlocal turn
            turn += 1
            return await store.transcript.append(
                session, role="user", content=f"  Hi {turn}\nsaid", turn_id=f"t{turn}", surface="rpc", mode=chosen
            )  # type: ignore[arg-type]

        for item in ops:
            kind = item[0]
            try:
                if kind == "create":
                    _, session, owner, chosen = item
                    await store.create(session, owner=owner, agent_alias="default", workspace_dir="/w", mode=chosen)
                elif kind == "append":
                    await append(item[1], item[2])
                elif kind == "update_text":
                    await store.transcript.update_text(item[1], 0, f"text {turn}", complete=False, mode=item[2])
                elif kind == "finish_turn":
                    await store.transcript.finish_turn(item[1], f"t{turn}", "end_turn", mode=item[2])
                elif kind == "overlap":
                    writes = (append(item[1], item[2]), store.touch(item[1], mode=item[2]))
                    await asyncio.gather(*writes, store.lists.list(None), return_exceptions=True)
                elif kind in ("touch", "close", "kill", "delete", "reopen"):
                    await getattr(store, kind)(item[1], mode=item[2])
                elif kind == "snapshot":
                    await store.transcript.save_snapshot(item[1], [{"role": "user", "content": "hi"}], -1)
                elif kind == "recover":
                    await store.transcript.recover_interrupted(item[1])
                elif kind == "list":
                    await store.lists.list(item[1], include_killed=item[2])
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
@example([("create", "s1", "o1", "acp"), ("create", "s2", "o1", "acp"), ("list", None, False), ("append", "s1", "acp")])
@example([("create", "s1", "o1", "acp"), ("append", "s1", "acp"), ("list", "o1", False), ("update_text", "s1", "acp")])
@example([("create", "s1", "o1", "acp"), ("list", None, False), ("fault", "append"), ("append", "s1", "acp")])
@example([("create", "s1", "o1", "acp"), ("list", None, False), ("overlap", "s1", "acp")])
@example([("create", "s1", "o1", "chat"), ("list", "o1", True), ("close", "s1", "chat"), ("reopen", "s1", "chat")])
@example([("create", "s1", "o1", "acp"), ("list", "o2", True), ("create", "s2", "o2", "acp"), ("delete", "s2", "acp")])
@example([("create", "s1", "o1", "acp"), ("close", "s1", "acp"), ("list", None, False), ("create", "s1", "o1", "acp")])
@settings(max_examples=150, deadline=None)
def test_cached_lists_equal_a_fresh_read(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_run(ops))


def test_every_write_but_recovery_is_applied_to_the_kept_lists_not_read_again() -> None:
    # A panel refreshes session/list after every action: creating, closing, killing or deleting a session keeps the
    # list exact without a read. Only recovery (rare: at most once per session per start) is read again.
    async def run() -> None:
        db = await _database()
        try:
            store = SessionStore(db)
            await store.create("s1", owner="o1", agent_alias="default", workspace_dir="/w")
            reads: list[object] = []
            unit = store._units.backend.list_page
            store._units.backend.list_page = lambda *args: reads.append(args) or unit(*args)  # type: ignore[method-assign]
            writes = (
                store.create("s2", owner="o2", agent_alias="default", workspace_dir="/w"),
                store.create("c1", owner="o1", agent_alias="default", workspace_dir="/w", mode="chat"),
                store.touch("s1"),
                store.transcript.save_snapshot("s1", [{"role": "user", "content": "hi"}], -1),
                store.close("s1"),
                store.create("s1", owner="o1", agent_alias="default", workspace_dir="/w"),  # resumed
                store.close("c1", mode="chat"),  # gone from every list
                store.kill("s2"),
                store.delete("s2"),
                store.delete("s3"),  # was never there
            )
            for write in writes:
                await write
                for owner in (None, *OWNERS):
                    for killed in (False, True):
                        expected = await SessionStore(db).lists.list(owner, include_killed=killed)
                        assert await store.lists.list(owner, include_killed=killed) == expected
            assert len(reads) == 6  # the first read of each (owner, killed) pair, none after a write
            await store.transcript.recover_interrupted("s1")
            assert await store.lists.list(None) == await SessionStore(db).lists.list(None) and len(reads) == 7
        finally:
            await db.close()

    asyncio.run(run())


def test_a_list_read_racing_a_write_does_not_fill_the_cache_with_what_the_write_changed(tmp_path: Path) -> None:
    # A database file, so reads run on reader threads beside the writer. The read is held until the write
    # committed: what it read is stale, and the next list must not be answered with it.
    started, release = threading.Event(), threading.Event()

    async def run() -> None:
        db, store = await _file_store(tmp_path)
        try:
            unit = store._units.backend.list_page
            store._units.backend.list_page = _held(unit, started, release)  # type: ignore[method-assign]
            read = asyncio.ensure_future(store.lists.list(None))
            assert await asyncio.to_thread(started.wait, 10)
            store._units.backend.list_page = unit  # type: ignore[method-assign]
            await store.kill("s1")  # committed while the read still holds its snapshot
            release.set()
            stale = await read
            assert [r.killed for r in stale] == [False]
            assert await store.lists.list(None) == []  # the killed session is gone from the default list
        finally:
            await db.close()

    asyncio.run(asyncio.wait_for(run(), 20))


def test_a_write_whose_caller_was_cancelled_still_empties_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> None:
        db = await _database()
        try:
            store = SessionStore(db)
            await store.create("s1", owner="o", agent_alias="default", workspace_dir="/w")
            assert [r.message_count for r in await store.lists.list(None)] == [0]  # cached
            await append_cancelled_mid_write(store, db, monkeypatch, "s1")
            assert [r.message_count for r in await store.lists.list(None)] == [1]
        finally:
            await db.close()

    asyncio.run(run())


def test_a_turns_checkpoints_are_applied_to_the_kept_list_not_read_again(database_url: str) -> None:
    # A panel polls session/list while turns stream: the checkpoints keep the list exact without a read.
    async def run() -> None:
        await asyncio.to_thread(upgrade, database_url)
        db = await Database.open(database_url)
        try:
            store = SessionStore(db)
            for session in ("s1", "s2"):
                await store.create(session, owner="o", agent_alias="default", workspace_dir="/w")
            reads: list[object] = []
            unit = store._units.backend.list_page
            store._units.backend.list_page = lambda *args: reads.append(args) or unit(*args)  # type: ignore[method-assign]
            assert [r.session_id for r in await store.lists.list(None)] == ["s2", "s1"]
            index = await store.transcript.append("s1", role="user", content="hi", turn_id="t1", surface="rpc")
            assert [(r.session_id, r.message_count) for r in await store.lists.list(None)] == [("s1", 1), ("s2", 0)]
            answer = await store.transcript.append(
                "s1", role="assistant", content="", turn_id="t1", surface="rpc", complete=False
            )
            for n in range(3):
                await store.transcript.update_text("s1", answer, "x" * n, complete=False)
                assert await store.lists.list(None) == await SessionStore(db).lists.list(None)
            await store.transcript.finish_turn("s1", "t1", "end_turn")
            assert await store.lists.list(None) == await SessionStore(db).lists.list(None)
            assert len(reads) == 1 and index == 0
            await store.create("s3", owner="o", agent_alias="default", workspace_dir="/w")
            assert [r.session_id for r in await store.lists.list(None)] == ["s3", "s1", "s2"] and len(reads) == 1
        finally:
            await db.close()

    asyncio.run(run())


def test_a_list_read_between_a_cancelled_write_and_its_commit_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The caller of an append is cancelled while its unit runs; a list and a context read then (on reader threads)
    # see the session before the row. The append still commits: neither cache may keep those reads.
    async def run() -> None:
        db, store = await _file_store(tmp_path)
        try:

            async def read_before_the_commit() -> None:
                assert [r.message_count for r in await store.lists.list(None)] == [0]
                assert (await store.transcript.context("s1")).next_index == 0

            await append_cancelled_mid_write(store, db, monkeypatch, "s1", read_before_the_commit)
            assert [r.message_count for r in await store.lists.list(None)] == [1]
            assert (await store.transcript.context("s1")).next_index == 1
        finally:
            await db.close()

    asyncio.run(asyncio.wait_for(run(), 20))


def test_a_list_read_that_began_during_a_write_and_ended_after_it_is_not_kept(tmp_path: Path) -> None:
    # The read sees the session before the append commits and returns after the append ended: stale.
    append_ran, release_append = threading.Event(), threading.Event()
    read_ran, release_read = threading.Event(), threading.Event()

    async def run() -> None:
        db, store = await _file_store(tmp_path)
        try:
            list_unit = store._units.backend.list_page
            store._units.backend.append = _held(store._units.backend.append, append_ran, release_append)  # type: ignore[method-assign]
            store._units.backend.list_page = _held(list_unit, read_ran, release_read)  # type: ignore[method-assign]
            append = asyncio.ensure_future(
                store.transcript.append("s1", role="user", content="hi", turn_id="t", surface="rpc")
            )
            assert await asyncio.to_thread(append_ran.wait, 10)
            read = asyncio.ensure_future(store.lists.list(None))
            assert await asyncio.to_thread(read_ran.wait, 10)
            store._units.backend.list_page = list_unit  # type: ignore[method-assign]
            release_append.set()
            assert await append == 0
            release_read.set()
            assert [r.message_count for r in await read] == [0]  # read before the commit
            assert [r.message_count for r in await store.lists.list(None)] == [1]
        finally:
            await db.close()

    asyncio.run(asyncio.wait_for(run(), 20))


def _held(unit: Callable[..., T], ran: threading.Event, release: threading.Event) -> Callable[..., T]:
    """`unit`, which once run says so and waits for `release` before it returns (its transaction still open)."""

    def held(*args: Any) -> T:
        result = unit(*args)
        ran.set()
        assert release.wait(10)
        return result

    return held


def _record(session: str, count: int = 0) -> SessionRecord:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    return SessionRecord(session, "o", "default", "acp", "/w", "rpc", at, at, False, False, count)


def test_overlapping_writes_of_one_session_empty_the_kept_lists_whichever_ends_first() -> None:
    # Their commits may come in either order (a pool of writers), so neither one's values are known to be the last.
    later = datetime(2026, 12, 2, tzinfo=UTC)
    for first_to_end in (0, 1):
        cache = ListCache()
        cache.fill((None, False), cache.version, [_record("s1"), _record("s2")])
        tickets = [cache.write_begins("s1"), cache.write_begins("s1")]
        cache.write_ends("s1", tickets[first_to_end], Activity("acp", later, 1))
        assert cache.page(EVERYONE, None, None) is None
        cache.fill((None, False), cache.version, [_record("s1"), _record("s2")])
        cache.write_ends("s1", tickets[1 - first_to_end], Activity("acp", later, 2))
        assert cache.page(EVERYONE, None, None) is None


def test_a_write_of_another_session_meanwhile_does_not_stop_a_checkpoint_being_applied() -> None:
    later = datetime(2026, 12, 2, tzinfo=UTC)
    cache = ListCache()
    cache.fill((None, False), cache.version, [_record("s1"), _record("s2")])
    mine, other = cache.write_begins("s2"), cache.write_begins("s1")
    cache.write_ends("s2", mine, Activity("acp", later, 3))
    assert [(r.session_id, r.message_count) for r in _kept(cache)] == [("s2", 3), ("s1", 0)]
    cache.write_ends("s1", other)  # not a checkpoint: empties
    assert cache.page(EVERYONE, None, None) is None


EVERYONE = ListQuery(None)


def _kept(cache: ListCache) -> list[SessionRecord]:
    page = cache.page(EVERYONE, None, None)
    return [] if page is None else page.records
