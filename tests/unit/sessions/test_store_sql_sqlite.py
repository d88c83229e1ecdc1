"""The SQLite units behind `session/list` and `session/messages` (SQL text on the driver connection) return exactly
what the Core units return, on one database with sessions of every state and transcripts of every row kind."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.sessions import store_sql
from app.sessions.store import SessionNotFound, SessionStore
from app.sessions.store_types import Mode
from app.storage import Database
from app.storage.migrate import upgrade

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SessionStore]:
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    try:
        yield SessionStore(db)
    finally:
        await db.close()


def _db(store: SessionStore) -> Database:
    return store._db  # the units run on the store's own database


def _typed(value: Any) -> Any:
    """A value with the type of every field spelled out: `True == 1` and naive/aware differences must not hide."""
    if isinstance(value, tuple | list):
        return [_typed(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, _typed(getattr(value, f.name))) for f in dataclasses.fields(value)]
    return (type(value).__name__, value, getattr(value, "tzinfo", None))


async def _populate(store: SessionStore) -> None:
    async def new(sid: str, owner: str, mode: Mode, surface: str = "rpc") -> None:
        await store.create(
            sid, owner=owner, agent_alias="default", workspace_dir=f"/w/{sid}", mode=mode, surface=surface
        )  # type: ignore[arg-type]

    async def say(sid: str, mode: Mode, role: str, content: str, turn: str, **kw: Any) -> int:
        return await store.append(sid, mode=mode, role=role, content=content, turn_id=turn, surface="rpc", **kw)  # type: ignore[arg-type]

    for mode in ("acp", "chat"):
        m: Mode = mode  # type: ignore[assignment]
        await new(f"{mode}-open", "alice", m)
        await new(f"{mode}-gw", "bob", m, "gateway")
        await new(f"{mode}-closed", "alice", m)
        await new(f"{mode}-killed", "bob", m)
        await new(f"{mode}-empty", "carol", m)
        for sid in (f"{mode}-open", f"{mode}-closed", f"{mode}-killed"):
            for turn in range(4):
                await say(sid, m, "user", f"question {turn} ✓ ü", f"t{turn}")
                await say(sid, m, "thought", "thinking", f"t{turn}")
                await say(sid, m, "tool_call", '{"cmd": "ls"}', f"t{turn}", tool_call_id=f"c{turn}", name="bash")
                await say(sid, m, "tool_result", "a\nb", f"t{turn}", tool_call_id=f"c{turn}", name="bash")
                index = await say(sid, m, "assistant", "", f"t{turn}", complete=False)
                if turn < 3:  # the last turn stays streaming: complete=False rows
                    await store.update_text(sid, index, f"answer {turn}", complete=True, mode=m)
                    await store.finish_turn(sid, f"t{turn}", "end_turn", mode=m)
            await say(sid, m, "marker", "", "t3", marker="interrupted")
        await store.close(f"{mode}-closed", mode=m)
        await store.kill(f"{mode}-killed", mode=m)
    await new("shared", "alice", "acp")  # the same id in both modes
    await new("shared", "alice", "chat")


async def test_sqlite_units_equal_the_core_units(store: SessionStore) -> None:
    db = _db(store)
    assert db.dialect == "sqlite"
    assert store._list_unit is store_sql.list_records_sqlite
    assert store._messages_unit is store_sql.messages_sqlite
    await _populate(store)

    for owner in (None, "alice", "bob", "carol", "nobody"):
        for include_killed in (False, True):
            core = await db.read(store_sql.list_records, owner, include_killed)
            raw = await db.read(store_sql.list_records_sqlite, owner, include_killed)
            assert raw == core
            assert _typed(raw) == _typed(core)
            assert core or owner == "nobody"
    everyone = await db.read(store_sql.list_records_sqlite, None, True)
    states = {(r.mode, r.killed, r.closed) for r in everyone}
    assert {("acp", True, False), ("acp", False, True), ("chat", True, False), ("acp", False, False)} <= states

    windows = [(100, None), (20, None), (7, None), (0, None), (1, None), (5, 10), (5, 3), (5, 0), (3, 1)]
    windows += [(10, 2**63 - 1), (100, 21), (2, 22), (50, 19)]
    for mode in ("acp", "chat"):
        m: Mode = mode  # type: ignore[assignment]
        for sid in (f"{mode}-open", f"{mode}-closed", f"{mode}-killed", f"{mode}-empty", "shared"):
            for limit, before in windows:
                core_rows, core_total = await db.read(store_sql.messages, m, sid, limit, before)
                raw_rows, raw_total = await db.read(store_sql.messages_sqlite, m, sid, limit, before)
                assert (raw_rows, raw_total) == (core_rows, core_total)
                assert _typed(raw_rows) == _typed(core_rows)
                assert type(raw_total) is type(core_total)
        rows, total = await db.read(store_sql.messages_sqlite, m, f"{mode}-open", 100, None)
        assert total == 21 and len(rows) == 21
        assert {r.role for r in rows} == {"user", "thought", "tool_call", "tool_result", "assistant", "marker"}
        assert {r.complete for r in rows} == {True, False}
        for unit in (store_sql.messages, store_sql.messages_sqlite):
            with pytest.raises(SessionNotFound):
                await db.read(unit, m, "missing", 10, None)
