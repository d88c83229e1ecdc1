"""SessionRegistry on a database that is full or read-only (R-STORE-3): the prompt raises the storage error (the
protocol answers `-32603 storage_unavailable`), the turn still ends with `turn_complete`, the live session stays, the
reads answer, nothing committed is lost, and the next prompt works once the fault is lifted.

The faults are SQLite's own (SQLITE_FULL, SQLITE_READONLY), set on the store's connections by the fault file of
`app.storage.driver_faults`, installed here as the daemon installs it from `ZEROCLAW_STORAGE_FAULT_FILE`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_registry_durable import NoClient, Sink

from app.auth.policy import Principal
from app.config import schema as config_schema
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore
from app.storage import Database, driver_faults
from app.storage.errors import unavailable_reason
from app.storage.migrate import upgrade

pytestmark = [
    pytest.mark.req("R-STORE-3"),
    pytest.mark.sqlite_only,  # the fault file drives SQLite pragmas
]

ALICE = Principal(id="alice", admin=False, agents=frozenset({"*"}))
BIG = "spill " * 8000  # a transcript row that needs pages of its own


@dataclass
class Env:
    registry: SessionRegistry
    store: SessionStore
    knob: Path


@pytest.fixture
async def env(tmp_path: Path, database_url: str) -> AsyncIterator[Env]:
    knob = tmp_path / "fault"
    driver_faults.install_from_env({driver_faults.ENV_VAR: str(knob)})
    try:
        await asyncio.to_thread(upgrade, database_url)
        db = await Database.open(database_url)
        try:
            store = SessionStore(db)
            config = config_schema.convert({})
            yield Env(SessionRegistry(store, lambda: config, tmp_path), store, knob)
        finally:
            knob.write_text("")
            await db.close()
    finally:
        driver_faults.uninstall()


async def rows(env: Env, sid: str) -> list[tuple[str, str]]:
    found, _total = await env.store.transcript.messages(sid)
    return [(r.role, r.content) for r in found]


@pytest.mark.parametrize(("mode", "reason", "text"), [("full", "disk_full", BIG), ("read_only", "read_only", "hi")])
async def test_a_turn_that_cannot_be_stored_raises_and_the_live_session_goes_on(
    env: Env, mode: str, reason: str, text: str
) -> None:
    registry = env.registry
    sid = (await registry.open(ALICE)).session.session_id
    await registry.turns.prompt(ALICE, sid, "before", sink=Sink(), client=NoClient())
    committed = [("user", "before"), ("assistant", "You said: «before»")]

    env.knob.write_text(mode)
    sink = Sink()
    with pytest.raises(Exception) as caught:
        await registry.turns.prompt(ALICE, sid, text, sink=sink, client=NoClient())
    assert unavailable_reason(caught.value) == reason
    assert sink.updates[-1]["type"] == "turn_complete" and sink.updates[-1]["stop_reason"] == "failed", sink.updates
    live = registry.live[sid]
    assert not live.busy  # the failed turn is over: no session_busy for the next prompt

    assert await rows(env, sid) == committed  # reads answer; nothing committed is lost
    listed = (await registry.reading.list_page(*registry.reading.list_query(ALICE), 1000)).sessions
    assert [(s.session_id, s.live) for s in listed] == [(sid, True)]

    env.knob.write_text("")
    outcome = await registry.turns.prompt(ALICE, sid, "after", sink=Sink(), client=NoClient())
    assert outcome.stop_reason == "end_turn" and registry.live[sid] is live  # the same live session
    assert await rows(env, sid) == [*committed, ("user", "after"), ("assistant", "You said: «after»")]


async def test_a_new_session_on_a_read_only_database_is_refused_and_leaves_nothing_live(env: Env) -> None:
    env.knob.write_text("read_only")
    with pytest.raises(Exception) as caught:
        await env.registry.open(ALICE)
    assert unavailable_reason(caught.value) == "read_only"
    assert env.registry.live == {}
    env.knob.write_text("")
    assert (await env.registry.open(ALICE)).resumed is False
