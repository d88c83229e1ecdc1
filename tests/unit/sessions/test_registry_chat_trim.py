"""R-MULTI-5: a chat session's provider context is bounded as an ACP session's is, in `chat_snapshots`.

Through the registry over a real store (both backends, tests/db_backend.py), with `[context] max_messages = 4`:
trims after a turn and, for a chat with no snapshot yet (one stored before migration 0006), before it. A
"restart" is a new store and registry on the same database: no cached context survives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from session_doubles import ALICE, NoClient, Sink

from app.config import schema as config_schema
from app.config.schema import Config
from app.sessions.errors import SessionNotFound
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import upgrade
from app.storage.models import AcpSnapshot, ChatSnapshot

pytestmark = [pytest.mark.req("R-MULTI-5"), pytest.mark.req("R-STORE-2")]

MAX_MESSAGES = 4


@dataclass
class Env:
    db: Database
    config: Config
    data_dir: Path
    store: SessionStore = field(init=False)

    def __post_init__(self) -> None:
        self.store = SessionStore(self.db)

    def registry(self) -> SessionRegistry:
        return SessionRegistry(self.store, lambda: self.config, self.data_dir)

    def restart(self) -> SessionRegistry:
        """A new store (no cached context) and registry on the same database."""
        self.store = SessionStore(self.db)
        return self.registry()

    async def snapshots(self, model: type[AcpSnapshot] | type[ChatSnapshot], sid: str) -> int:
        query = sa.select(sa.func.count()).select_from(model).where(model.session_id == sid)
        return int(await self.db.read(lambda s: s.execute(query).scalar_one()))


@pytest.fixture
async def env(tmp_path: Path, database_url: str) -> AsyncIterator[Env]:
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    config = config_schema.convert({"context": {"max_messages": MAX_MESSAGES}})
    try:
        yield Env(db, config, tmp_path)
    finally:
        await db.close()


async def prompt(registry: SessionRegistry, sid: str, text: str) -> tuple[Any, Sink]:
    sink = Sink()
    outcome = await registry.turns.prompt(ALICE, sid, text, sink=sink, client=NoClient())
    assert sink.updates[-1]["type"] == "turn_complete", sink.updates
    return outcome, sink


async def context_lines(registry: SessionRegistry, sid: str) -> tuple[list[str], Sink]:
    """What the scripted provider was given, as it reports it (`/context`)."""
    outcome, sink = await prompt(registry, sid, "/context")
    return outcome.content.splitlines(), sink


async def open_chat(registry: SessionRegistry, sid: str = "c1") -> str:
    return (await registry.open(ALICE, session_id=sid, mode="chat")).session.session_id


async def test_a_long_chat_is_trimmed_and_keeps_its_whole_transcript(env: Env) -> None:
    registry = env.registry()
    sid = await open_chat(registry)
    announced = []
    for n in range(12):
        lines, sink = await context_lines(registry, sid)
        # never more than the budget given to the provider, after any number of turns
        assert len(lines) <= MAX_MESSAGES and lines[-1] == "user: /context", (n, lines)
        announced += sink.of_type("history_trimmed")
    # the third turn would have sent five messages: the two oldest went first, announced before the turn
    assert announced[0].pop("seq") > 0  # numbered as every update is (R-MULTI-1)
    assert announced[0] == {
        "session_id": sid,
        "type": "history_trimmed",
        "dropped_messages": 2,
        "kept_messages": 2,
        "checkpoint": 3,
        "kept_turns": 1,
        "reason": "history message limit exceeded",
    }
    # keeping 3 of 4 with the prompt leaves one exchange: with so small a budget every later turn trims too
    assert len(announced) == 10, announced
    # R-ACP-1: trimming never touches the visible transcript
    rows, total = await env.store.transcript.messages(sid, mode="chat", limit=1000)
    assert total == 24 and [r.index for r in rows] == list(range(24))
    assert [r.role for r in rows] == ["user", "assistant"] * 12


async def test_a_restart_recovers_the_bound_from_the_chat_snapshot(env: Env) -> None:
    registry = env.registry()
    sid = await open_chat(registry)
    for text in ("one", "two", "three"):
        await prompt(registry, sid, text)
    await registry.shutdown()
    restarted = env.restart()
    recovered = await env.store.transcript.context(sid, mode="chat")
    # trimmed before "three" (boundary 3), then its own two rows on top
    assert (recovered.snapshot_id, recovered.boundary, recovered.replayed_rows) == (1, 3, 2)
    await open_chat(restarted, sid)
    lines, sink = await context_lines(restarted, sid)
    assert lines == ["user: three", "assistant: You said: «three»", "user: /context"]
    assert [(t["checkpoint"], t["dropped_messages"]) for t in sink.of_type("history_trimmed")] == [(5, 2)]


async def test_a_chat_without_a_snapshot_is_trimmed_before_its_turn(env: Env) -> None:
    """A chat stored before migration 0006 has no snapshot: its first turn must not send the whole history."""
    registry = env.registry()
    sid = await open_chat(registry)
    store = env.store
    for n in range(10):
        await store.transcript.append(
            sid, mode="chat", role="user", content=f"old q{n}", turn_id=f"t{n}", surface="rpc"
        )
        await store.transcript.append(
            sid, mode="chat", role="assistant", content=f"old a{n}", turn_id=f"t{n}", surface="rpc"
        )
    lines, sink = await context_lines(registry, sid)
    assert lines == ["user: old q9", "assistant: old a9", "user: /context"]
    # announced before the turn's own updates, with the boundary before its prompt
    assert sink.types()[0] == "history_trimmed" and sink.types().count("history_trimmed") == 1, sink.types()
    trimmed = sink.of_type("history_trimmed")[0]
    assert trimmed["checkpoint"] == 19 and trimmed["dropped_messages"] == 18
    _rows, total = await store.transcript.messages(sid, mode="chat", limit=0)
    assert total == 22


async def test_delete_removes_the_chat_snapshots_and_leaves_an_acp_session_with_the_same_id(env: Env) -> None:
    store = env.store
    for mode in ("acp", "chat"):
        await store.create("same", owner="alice", agent_alias="default", workspace_dir=env.data_dir, mode=mode)
        await store.transcript.append(
            "same", mode=mode, role="user", content=f"{mode} text", turn_id="t1", surface="rpc"
        )
        await store.transcript.save_snapshot("same", [{"role": "user", "content": f"{mode} kept"}], 0, mode=mode)
    # each mode reads its own snapshot, from the cache and from the database alike
    for current in (store, SessionStore(env.db)):
        for mode in ("acp", "chat"):
            context = await current.transcript.context("same", mode=mode)
            assert context.messages == [{"role": "user", "content": f"{mode} kept"}], (mode, context)
    assert await store.delete("same", mode="chat") is True
    assert (await env.snapshots(ChatSnapshot, "same"), await env.snapshots(AcpSnapshot, "same")) == (0, 1)
    assert (await store.transcript.context("same", mode="acp")).snapshot_id == 1
    with pytest.raises(SessionNotFound):
        await store.transcript.save_snapshot("same", [], -1, mode="chat")


async def test_a_chat_snapshot_is_kept_per_surface_and_pruned(env: Env) -> None:
    store = env.store
    await store.create("c1", owner="alice", agent_alias="default", workspace_dir=env.data_dir, mode="chat")
    await store.transcript.append("c1", mode="chat", role="user", content="hi", turn_id="t1", surface="gateway")
    ids = [
        await store.transcript.save_snapshot(
            "c1", [{"role": "user", "content": str(n)}], 0, mode="chat", surface="gateway"
        )
        for n in range(5)
    ]
    assert ids == [1, 2, 3, 4, 5]
    assert await env.snapshots(ChatSnapshot, "c1") == 3  # SNAPSHOTS_KEPT
    context = await SessionStore(env.db).transcript.context("c1", mode="chat", surface="gateway")
    assert context.snapshot_id == 5 and context.messages == [{"role": "user", "content": "4"}]
