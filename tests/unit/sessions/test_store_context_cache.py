"""The store's context cache (app/sessions/store/context_cache.py) never differs from a fresh read (R-ACP-5, R-ACP-7).

Random sequences of the store's writes, with contexts read in between (which fill the cache) and injected
faults (a failed write drops what is cached), compare every `context()` with one computed by a store that has
never cached anything, on the same database.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cancelled_write import append_cancelled_mid_write
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.sessions.errors import SessionKilled
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.faults import StorageFault
from app.storage.models import Base

SID = "s1"

append = st.tuples(
    st.just("append"),
    st.sampled_from(["user", "assistant", "tool_call", "tool_result", "marker", "thought"]),
    st.sampled_from(["rpc", "gateway"]),
    st.sampled_from(["t1", "t2", "t3"]),
    st.booleans(),  # complete
    st.booleans(),  # empty, as a turn appends its assistant row before streaming its text
)
update = st.tuples(st.just("update_text"), st.integers(0, 8), st.sampled_from(["", "x", "yy", "zzz"]), st.booleans())
op = st.one_of(
    append,
    append,
    update,
    update,
    st.tuples(st.just("finish_turn"), st.sampled_from(["t1", "t2", "t3"])),
    st.tuples(st.just("snapshot"), st.sampled_from(["rpc", "gateway"]), st.integers(0, 4)),
    st.tuples(st.just("recover"), st.sampled_from(["rpc", "gateway"])),
    st.tuples(st.just("context"), st.sampled_from(["rpc", "gateway"])),
    st.tuples(st.just("fault"), st.sampled_from(["append", "update_text", "save_snapshot", "recover"])),
    st.tuples(st.just("touch")),
)


async def _check(store: SessionStore, db: Database, surface: Any) -> None:
    fresh = SessionStore(db)
    try:
        expected = await fresh.transcript.context(SID, surface=surface)
    except SessionKilled:
        try:
            await store.transcript.context(SID, surface=surface)
        except SessionKilled:
            return
        raise AssertionError("the cache answered for a killed session") from None
    assert await store.transcript.context(SID, surface=surface) == expected


async def _run(ops: list[tuple[Any, ...]]) -> None:
    db = await Database.open("sqlite+aiosqlite://")
    try:
        await db.write(lambda s: Base.metadata.create_all(s.connection()))
        store = SessionStore(db)
        await store.create(SID, owner="o", agent_alias="default", workspace_dir="/tmp")
        counter = 0
        for item in ops:
            kind = item[0]
            try:
                if kind == "append":
                    _, role, surface, turn, complete, empty = item
                    counter += 1
                    extra: dict[str, Any] = {}
                    if role in ("tool_call", "tool_result"):
                        extra = {"tool_call_id": f"tc_{counter % 3}", "name": "bash"}
                    if role == "marker":
                        extra = {"marker": "interrupted"}
                    await store.transcript.append(
                        SID,
                        role=role,
                        content="" if empty else f"c{counter}",
                        turn_id=turn,
                        surface=surface,
                        complete=complete,
                        **extra,
                    )
                elif kind == "update_text":
                    _, index, text, complete = item
                    await store.transcript.update_text(SID, index, text, complete=complete)
                elif kind == "finish_turn":
                    await store.transcript.finish_turn(SID, item[1], "end_turn")
                elif kind == "snapshot":
                    _, surface, keep = item
                    context = await SessionStore(db).transcript.context(SID, surface=surface)
                    # keep == 0: an empty snapshot at boundary -1, below any earlier one (replay starts over)
                    messages, boundary = (context.messages[-keep:], context.covers) if keep else ([], -1)
                    await store.transcript.save_snapshot(SID, messages, boundary, surface=surface)
                elif kind == "recover":
                    await store.transcript.recover_interrupted(SID, surface=item[1])
                elif kind == "context":
                    await store.transcript.context(SID, surface=item[1])
                elif kind == "fault":
                    store.faults.arm(item[1])
                elif kind == "touch":
                    await store.touch(SID)
                elif kind == "kill":
                    await store.kill(SID)
            except (ValueError, LookupError, StorageFault, SessionKilled):
                pass  # refused or failed: nothing changed, and the cache must know it
            for surface in ("rpc", "gateway"):
                await _check(store, db, surface)
    finally:
        await db.close()


@given(st.lists(op, max_size=40))
@example([("append", "user", "rpc", "t1", True, False), ("update_text", 0, "x", True)])
@example(
    [
        ("append", "assistant", "rpc", "t1", False, False),
        ("recover", "rpc"),
        ("append", "user", "rpc", "t2", True, False),
    ]
)
@example(
    [("append", "user", "rpc", "t1", True, False), ("snapshot", "rpc", 1), ("append", "user", "rpc", "t2", True, False)]
)
@example(
    [
        ("append", "user", "gateway", "t1", True, False),
        ("fault", "append"),
        ("append", "user", "gateway", "t1", True, False),
    ]
)
@example(
    [("append", "user", "rpc", "t1", True, False), ("snapshot", "rpc", 1), ("snapshot", "rpc", 0), ("context", "rpc")]
)
@example(
    [
        ("context", "rpc"),
        ("append", "user", "rpc", "t1", True, False),
        ("append", "assistant", "rpc", "t1", False, True),  # a turn's streamed answer: empty, then its text
        ("context", "rpc"),
        ("update_text", 1, "x", False),
        ("update_text", 1, "yy", True),
        ("update_text", 1, "", True),
    ]
)
@settings(max_examples=300, deadline=None)
def test_cached_context_equals_a_fresh_read(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_run(ops))


def test_a_killed_session_is_never_answered_from_the_cache() -> None:
    asyncio.run(_run([("context", "rpc"), ("append", "user", "rpc", "t1", True, False), ("context", "rpc"), ("kill",)]))


def test_a_racing_read_does_not_fill_the_cache_with_what_a_write_changed() -> None:
    async def run() -> None:
        db = await Database.open("sqlite+aiosqlite://")
        try:
            await db.write(lambda s: Base.metadata.create_all(s.connection()))
            store = SessionStore(db)
            await store.create(SID, owner="o", agent_alias="default", workspace_dir="/tmp")
            # The read is submitted first but may finish after the append committed; either way the next
            # context must show the appended row.
            read = asyncio.ensure_future(store.transcript.context(SID))
            await store.transcript.append(SID, role="user", content="hello", turn_id="t1", surface="rpc")
            await read
            assert (await store.transcript.context(SID)).messages == [{"role": "user", "content": "hello"}]
        finally:
            await db.close()

    asyncio.run(run())


def test_an_append_whose_caller_was_cancelled_mid_write_drops_the_cached_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def run() -> None:
        db = await Database.open("sqlite+aiosqlite://")
        try:
            await db.write(lambda s: Base.metadata.create_all(s.connection()))
            store = SessionStore(db)
            await store.create(SID, owner="o", agent_alias="default", workspace_dir="/tmp")
            await store.transcript.context(SID)  # cached: empty
            await append_cancelled_mid_write(store, db, monkeypatch, SID)
            assert (await store.transcript.context(SID)).messages == [{"role": "user", "content": "hi"}]
        finally:
            await db.close()

    asyncio.run(run())
