"""The store's two backends do the same: `SqliteBackend` (SQL text on the driver connection) does exactly what
its Core twins in `CoreBackend` do: the reads behind `session/list` and `session/messages` return equal values, on
one database with sessions of every state and transcripts of every row kind; the writes of a turn's checkpoints
leave equal tables."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.dialects.sqlite import DATETIME

from app.sessions.errors import SessionNotFound
from app.sessions.list_pages import ListQuery
from app.sessions.mode import SessionMode
from app.sessions.store.core_backend import CoreBackend
from app.sessions.store.session_store import SessionStore
from app.sessions.store.sqlite_backend import SqliteBackend, sqlite_time
from app.sessions.store.types import SessionRecord
from app.storage import Database
from app.storage.migrate import upgrade
from app.storage.types import UTCDateTime

pytestmark = pytest.mark.sqlite_only

CORE, RAW = CoreBackend(), SqliteBackend()


def _db(store: SessionStore) -> Database:
    return store._units.db  # the units run on the store's own database


def _typed(value: Any) -> Any:
    """A value with the type of every field spelled out: `True == 1` and naive/aware differences must not hide."""
    if isinstance(value, tuple | list):
        return [_typed(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, _typed(getattr(value, f.name))) for f in dataclasses.fields(value)]
    return (type(value).__name__, value, getattr(value, "tzinfo", None))


async def _populate(store: SessionStore) -> None:
    async def new(sid: str, owner: str, mode: SessionMode, surface: str = "rpc") -> None:
        await store.create(
            sid, owner=owner, agent_alias="default", workspace_dir=f"/w/{sid}", mode=mode, surface=surface
        )  # type: ignore[arg-type]

    async def say(sid: str, mode: SessionMode, role: str, content: str, turn: str, **kw: Any) -> int:
        return await store.transcript.append(
            sid, mode=mode, role=role, content=content, turn_id=turn, surface="rpc", **kw
        )  # type: ignore[arg-type]

    for mode in ("acp", "chat"):
        m: SessionMode = mode  # type: ignore[assignment]
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
                    await store.transcript.update_text(sid, index, f"answer {turn}", complete=True, mode=m)
                    await store.transcript.finish_turn(sid, f"t{turn}", "end_turn", mode=m)
            await say(sid, m, "marker", "", "t3", marker="interrupted")
        await store.close(f"{mode}-closed", mode=m)
        await store.kill(f"{mode}-killed", mode=m)
    await new("shared", "alice", "acp")  # the same id in both modes
    await new("shared", "alice", "chat")


async def test_sqlite_units_equal_the_core_units(store: SessionStore) -> None:
    db = _db(store)
    assert db.dialect == "sqlite"
    assert type(store._units.backend) is SqliteBackend  # the store picks the SQLite backend on SQLite
    await _populate(store)

    for owner in (None, "alice", "bob", "carol", "nobody"):
        for include_killed in (False, True):
            for mode, query in ((None, None), ("acp", None), ("chat", "QUESTION"), (None, "ü"), (None, "%")):
                listing = ListQuery(owner, include_killed, mode, query)  # type: ignore[arg-type]
                core = await db.read(CORE.list_page, listing, None, None)
                raw = await db.read(RAW.list_page, listing, None, None)
                assert raw == core
                assert _typed(raw.records) == _typed(core.records)
                assert core.records or owner == "nobody" or query is not None
                # R-MULTI-4: every page size walks the same list, through either unit, each session once
                for limit in (1, 2, 3, 1000):
                    walked: list[SessionRecord] = []
                    after = None
                    while True:
                        page = await db.read(RAW.list_page, listing, after, limit)
                        assert page == await db.read(CORE.list_page, listing, after, limit)
                        walked += page.records
                        if (after := page.last) is None:
                            break
                    assert walked == core.records
    everyone = (await db.read(RAW.list_page, ListQuery(None, True), None, None)).records
    states = {(r.mode, r.killed, r.closed) for r in everyone}
    assert {("acp", True, False), ("acp", False, True), ("chat", True, False), ("chat", False, True)} <= states
    assert {r.title for r in everyone} == {"question 0 ✓ ü", None}

    windows = [(100, None), (20, None), (7, None), (0, None), (1, None), (5, 10), (5, 3), (5, 0), (3, 1)]
    windows += [(10, 2**63 - 1), (100, 21), (2, 22), (50, 19)]
    for mode in ("acp", "chat"):
        m: SessionMode = mode  # type: ignore[assignment]
        for sid in (f"{mode}-open", f"{mode}-closed", f"{mode}-killed", f"{mode}-empty", "shared"):
            for limit, before in windows:
                core_rows, core_total = await db.read(CORE.messages, m, sid, limit, before)
                raw_rows, raw_total = await db.read(RAW.messages, m, sid, limit, before)
                assert (raw_rows, raw_total) == (core_rows, core_total)
                assert _typed(raw_rows) == _typed(core_rows)
                assert type(raw_total) is type(core_total)
                # `turnEnds` (issue 29 §4.9) reads the same page through either unit, and the same ends
                core_page = await db.read(CORE.messages_and_turn_ends, m, sid, limit, before)
                raw_page = await db.read(RAW.messages_and_turn_ends, m, sid, limit, before)
                assert raw_page == core_page and _typed(raw_page) == _typed(core_page)
                assert raw_page[:2] == (core_rows, core_total)
        rows, total = await db.read(RAW.messages, m, f"{mode}-open", 100, None)
        assert total == 21 and len(rows) == 21
        assert {r.role for r in rows} == {"user", "thought", "tool_call", "tool_result", "assistant", "marker"}
        assert {r.complete for r in rows} == {True, False}
        for unit in (CORE.messages, RAW.messages):
            with pytest.raises(SessionNotFound):
                await db.read(unit, m, "missing", 10, None)
    # t0..t2 ended (five rows each); t3 never did, its marker row is only a row
    _rows, _total, ends = await db.read(RAW.messages_and_turn_ends, "acp", "acp-open", 100, None)
    assert [(end.index, end.stop_reason) for end in ends] == [(4, "end_turn"), (9, "end_turn"), (14, "end_turn")]


# -- writes ------------------------------------------------------------------------------------------------------

_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$")
_TABLES = ("acp_sessions", "chat_sessions", "acp_transcript", "chat_messages", "acp_turns", "acp_snapshots")


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the session tables, times replaced by "<time>" once they are shown to be stored as SQLAlchemy
    stores them (the two runs write at different moments)."""
    connection = sqlite3.connect(path)
    try:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table in _TABLES:
            cursor = connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
            names = [d[0] for d in cursor.description]
            rows = []
            for row in cursor:
                shown = []
                for name, value in zip(names, row, strict=True):
                    if name.endswith(("_at", "_activity")) and value is not None:
                        assert isinstance(value, str) and _TIME.match(value), (table, name, value)
                        value = "<time>"
                    shown.append((type(value).__name__, value))
                rows.append(tuple(shown))
            out[table] = rows
        return out
    finally:
        connection.close()


async def _edge_writes(store: SessionStore) -> list[str]:
    """Writes that fail or take a rare branch; returns what each raised, in order."""
    seen: list[str] = []

    async def attempt(write: Any) -> None:
        try:
            await write
        except Exception as exc:
            seen.append(type(exc).__name__)
        else:
            seen.append("ok")

    await store.create("edge", owner="alice", agent_alias="default", workspace_dir="/w/edge")
    await store.create("edge", owner="alice", agent_alias="default", workspace_dir="/w/edge", mode="chat")
    for mode in ("acp", "chat"):
        m: SessionMode = mode  # type: ignore[assignment]
        await attempt(store.transcript.append("missing", mode=m, role="user", content="x", turn_id="t", surface="rpc"))
        await attempt(
            store.transcript.append("edge", mode=m, role="user", content="é" * 40_000, turn_id="big", surface="rpc")
        )
        await attempt(
            store.transcript.append(
                "edge", mode=m, role="marker", content="", turn_id="m", surface="rpc", marker="interrupted"
            )
        )
        await attempt(store.transcript.update_text("edge", 1, "changed", complete=True, mode=m))  # the marker row
        await attempt(store.transcript.update_text("edge", 99, "changed", complete=True, mode=m))
        await attempt(store.transcript.update_text("missing", 0, "changed", complete=True, mode=m))
        await attempt(store.transcript.update_text("edge", 0, "shorter", complete=False, mode=m))
        await attempt(
            store.transcript.finish_turn("edge", "never-wrote", "failed", mode=m)
        )  # a terminal record of its own
        await attempt(store.transcript.finish_turn("edge", "big", "end_turn", mode=m))
        await attempt(store.transcript.finish_turn("edge", "big", "cancelled", mode=m))  # the first stop reason wins
        await attempt(store.transcript.finish_turn("missing", "t", "end_turn", mode=m))
        await attempt(
            store.transcript.append(
                "edge", mode=m, role="assistant", content="on", turn_id="big", surface="rpc", complete=False
            )
        )
        await attempt(store.transcript.update_text("edge", 2, "still streaming", complete=False, mode=m))
    return seen


async def test_sqlite_writes_equal_the_core_writes(tmp_path: Path) -> None:
    """The same checkpoints through either set of units leave the same tables, the same errors and the same cached
    context; a time is stored exactly as SQLAlchemy stores it."""
    dumps, errors, contexts = [], [], []
    for name, backend in (("core", CORE), ("sqlite", RAW)):
        path = tmp_path / f"{name}.db"
        url = f"sqlite+aiosqlite:///{path}"
        await asyncio.to_thread(upgrade, url)
        db = await Database.open(url)
        try:
            store = SessionStore(db)
            assert type(store._units.backend) is SqliteBackend  # the store picks the SQLite backend on SQLite
            store._units.backend = backend
            await _populate(store)
            errors.append(await _edge_writes(store))
            contexts.append([await store.transcript.context(sid) for sid in ("acp-open", "edge")])
        finally:
            await db.close()
        dumps.append(_dump(path))
    assert errors[0] == errors[1]
    assert errors[0].count("ok") > 8 and {"SessionNotFound", "RowNotFound", "ValueError"} <= set(errors[0])
    assert contexts[0] == contexts[1]
    core, raw = dumps
    assert all(core[table] for table in _TABLES if table != "acp_snapshots")
    for table in _TABLES:
        assert raw[table] == core[table], table


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 12, 1, 16, 33, 36, 123456, tzinfo=UTC),
        datetime(2026, 12, 1, 16, 33, 36, tzinfo=UTC),  # no fraction: still six digits
        datetime(2026, 12, 1, 18, 0, 0, 5, tzinfo=timezone(timedelta(hours=2))),  # another zone: stored as UTC
        datetime(1, 1, 1, tzinfo=UTC),
    ],
)
def test_sqlite_time_is_what_sqlalchemy_stores(moment: datetime) -> None:
    dialect = sqlite_dialect.dialect()
    stored = DATETIME().bind_processor(dialect)(UTCDateTime().process_bind_param(moment, dialect))
    assert sqlite_time(moment) == stored
