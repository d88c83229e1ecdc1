"""SessionRegistry over a real store: recovery by surface (R-ACP-7), snapshots (R-ACP-2, 3, 6), resume counts
(R-ACP-5, 8) and the kill/delete ordering under storage faults (R-ACP-10, 11).

The gateway surface (REST, webhooks, panel chat) has no session routes yet, so its rows are written here the way
that surface's turn runner would write them; everything else goes through the registry as the RPC methods do.
A "restart" is a new `SessionRegistry` on the same store: the in-memory owners are gone, the database is not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from gc_probe import cyclic_garbage
from session_doubles import ALICE, NoClient, Sink

from app.auth.policy import Principal
from app.config import schema as config_schema
from app.config.schema import Config
from app.sessions.errors import SessionNotFound
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore, StorageFault
from app.storage import Database
from app.storage.faults import Faults
from app.storage.migrate import upgrade
from app.storage.models import AcpSnapshot, AcpTurn

# R-STORE-2: runs on SQLite and, in the CI PostgreSQL pass, on PostgreSQL (tests/db_backend.py).
pytestmark = pytest.mark.req("R-STORE-2")

SYSTEM_PROMPT = "You are a unit-test agent."


@dataclass
class Env:
    db: Database
    store: SessionStore
    faults: Faults
    config: Config
    data_dir: Path

    def registry(self) -> SessionRegistry:
        """A fresh registry on the same database: what a restarted daemon has."""
        return SessionRegistry(self.store, lambda: self.config, self.data_dir)


@pytest.fixture
async def env(tmp_path: Path, database_url: str) -> AsyncIterator[Env]:
    url = database_url
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    faults = Faults()
    config = config_schema.convert(
        {"context": {"max_messages": 4}, "agents": {"sys": {"system_prompt": SYSTEM_PROMPT}}}
    )
    try:
        yield Env(db, SessionStore(db, faults=faults), faults, config, tmp_path)
    finally:
        await db.close()


async def prompt(registry: SessionRegistry, sid: str, text: str) -> tuple[Any, Sink]:
    sink = Sink()
    outcome = await registry.turns.prompt(ALICE, sid, text, sink=sink, client=NoClient())
    assert sink.updates[-1]["type"] == "turn_complete", sink.updates
    return outcome, sink


async def context_lines(registry: SessionRegistry, sid: str) -> list[str]:
    outcome, _sink = await prompt(registry, sid, "/context")
    assert outcome.stop_reason == "end_turn"
    return outcome.content.splitlines()  # type: ignore[no-any-return]


async def turns(env: Env, sid: str) -> dict[str, tuple[str | None, str | None]]:
    rows = await env.db.read(lambda s: s.scalars(sa.select(AcpTurn).where(AcpTurn.session_id == sid)).all())
    return {t.turn_id: (t.interaction_surface, t.stop_reason) for t in rows}


# --------------------------------------------------------------------------------------------- surfaces


@pytest.mark.req("R-ACP-7")
@pytest.mark.req("R-ACP-5")
@pytest.mark.parametrize("use", ["open", "prompt"])
async def test_rpc_recovery_leaves_gateway_rows_for_their_own_recovery(env: Env, use: str) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await prompt(registry, sid, "hello")
    # the daemon dies during an RPC turn and during a gateway turn on the same session
    store = env.store
    await store.transcript.append(sid, role="user", content="rpc question", turn_id="t_rpc", surface="rpc")
    await store.transcript.append(
        sid, role="assistant", content="rpc partial", turn_id="t_rpc", surface="rpc", complete=False
    )
    await store.transcript.append(sid, role="user", content="gw question", turn_id="t_gw", surface="gateway")
    await store.transcript.append(
        sid, role="assistant", content="gw partial", turn_id="t_gw", surface="gateway", complete=False
    )

    restarted = env.registry()
    if use == "open":
        opened = await restarted.open(ALICE, session_id=sid)
        assert opened.resumed is True
        assert opened.message_count == 7  # 2 + 4 checkpoint rows + the marker (R-ACP-8: messageCount = rows)
        lines = await context_lines(restarted, sid)
    else:
        lines = await context_lines(restarted, sid)  # the prompt itself rehydrates (owner gone)
    # the rpc context: the cut rpc turn's progress, never the gateway rows, never the marker
    assert lines == [
        "user: hello",
        "assistant: You said: «hello»",
        "user: rpc question",
        "assistant: rpc partial",
        "user: /context",
    ]
    rows, _total = await store.transcript.messages(sid)
    markers = [r for r in rows if r.role == "marker"]
    assert len(markers) == 1 and markers[0].surface == "rpc" and markers[0].turn_id == "t_rpc", markers
    assert markers[0].index == 6  # appended after the last checkpoint row
    by_content = {r.content: r for r in rows}
    assert by_content["rpc partial"].complete is True
    # the gateway checkpoint is exactly as it was written: incomplete, its turn still open
    assert by_content["gw partial"].complete is False and by_content["gw question"].complete is True
    recorded = await turns(env, sid)
    assert recorded["t_rpc"] == ("rpc", "interrupted")
    assert recorded["t_gw"] == ("gateway", None)

    # a later direct recovery on the gateway surface can still inspect and repair it, once
    assert await store.transcript.recover_interrupted(sid, surface="gateway") is True
    assert await store.transcript.recover_interrupted(sid, surface="gateway") is False
    assert (await turns(env, sid))["t_gw"] == ("gateway", "interrupted")
    gateway_context = (await store.transcript.context(sid, surface="gateway")).messages
    assert [m["content"] for m in gateway_context] == ["gw question", "gw partial"]


@pytest.mark.req("R-ACP-5")
async def test_resuming_twice_appends_one_marker(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await env.store.transcript.append(sid, role="user", content="cut", turn_id="t_cut", surface="rpc")
    for attempt in range(3):
        restarted = env.registry()
        opened = await restarted.open(ALICE, session_id=sid)
        rows, total = await env.store.transcript.messages(sid)
        assert opened.message_count == total == 2, (attempt, rows)
        assert [r.role for r in rows] == ["user", "marker"]


@pytest.mark.req("R-ACP-5")
async def test_concurrent_bring_ups_of_a_stored_session_make_one_live_session(env: Env) -> None:
    sid = (await env.registry().open(ALICE, session_id="s1")).session.session_id
    await env.store.transcript.append(
        sid, role="user", content="cut", turn_id="t_cut", surface="rpc"
    )  # a turn cut short
    restarted = env.registry()
    first, second, third = await asyncio.gather(
        restarted.open(ALICE, session_id=sid),
        restarted.open(ALICE, session_id=sid),
        restarted.live_or_rehydrate(ALICE, sid),
    )
    assert first.session is second.session is third is restarted.live[sid]
    rows, _total = await env.store.transcript.messages(sid)
    assert [r.role for r in rows] == ["user", "marker"]  # recovered once


@pytest.mark.req("R-SES-2")
async def test_two_prompts_at_once_on_a_stored_session_run_one_turn(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await registry.close(ALICE, sid)  # durable, not live: each prompt would bring it back to life
    results = await asyncio.gather(
        registry.turns.prompt(ALICE, sid, "/sleep 0.2", sink=Sink(), client=NoClient()),
        registry.turns.prompt(ALICE, sid, "/sleep 0.2", sink=Sink(), client=NoClient()),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["SessionBusy", "TurnOutcome"], results


# -------------------------------------------------------------------------------------------- snapshots


@pytest.mark.req("R-ACP-6")
async def test_an_empty_snapshot_is_authoritative(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await prompt(registry, sid, "one")
    covers = (await env.store.transcript.context(sid)).covers
    await env.store.transcript.save_snapshot(sid, [], covers)
    assert await context_lines(registry, sid) == ["user: /context"]
    # and after a restart too: the model restarts with no history, not with the whole transcript
    assert (await context_lines(env.registry(), sid))[-3:] == [
        "user: /context",
        "assistant: user: /context",
        "user: /context",
    ]
    assert (await env.store.transcript.messages(sid))[1] == 6  # the transcript keeps every row


@pytest.mark.req("R-ACP-6")
async def test_legacy_replay_drops_markers_and_orphan_calls_even_when_ids_repeat(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1", agent_alias="default")).session.session_id
    s = env.store.transcript
    # an interrupted turn: a call with no result (then recovery's marker)...
    await s.append(sid, role="user", content="/bash sleep 9", turn_id="t1", surface="rpc")
    await s.append(sid, role="tool_call", content='{"command":"sleep 9"}', tool_call_id="tc_1", name="bash",
                   turn_id="t1", surface="rpc")  # fmt: skip
    assert await s.recover_interrupted(sid) is True
    # ...then a finished turn whose call got the same id (the provider numbers from what it is shown)
    await s.append(sid, role="user", content="/bash echo hi", turn_id="t2", surface="rpc")
    await s.append(sid, role="tool_call", content='{"command":"echo hi"}', tool_call_id="tc_1", name="bash",
                   turn_id="t2", surface="rpc")  # fmt: skip
    await s.append(sid, role="tool_result", content="hi", tool_call_id="tc_1", name="bash", turn_id="t2",
                   surface="rpc")  # fmt: skip
    await s.append(sid, role="assistant", content="Command output:\nhi", turn_id="t2", surface="rpc")
    await s.finish_turn(sid, "t2", "end_turn")
    context = (await s.context(sid)).messages
    assert context == [
        {"role": "user", "content": "/bash sleep 9"},
        {"role": "user", "content": "/bash echo hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "tc_1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"echo hi"}'}}
        ]},
        {"role": "tool", "tool_call_id": "tc_1", "name": "bash", "content": "hi"},
        {"role": "assistant", "content": "Command output:\nhi"},
    ]  # fmt: skip
    assert await context_lines(env.registry(), sid) == [
        "user: /bash sleep 9",
        "user: /bash echo hi",
        "assistant: ",
        "tool: hi",
        "assistant: Command output: hi",
        "user: /context",
    ]


@pytest.mark.req("R-ACP-2")
@pytest.mark.req("R-ACP-1")
async def test_a_failed_snapshot_keeps_the_previous_one_and_sends_nothing(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    for word in ("one", "two"):
        _outcome, sink = await prompt(registry, sid, word)
        assert not sink.of_type("history_trimmed")
    _outcome, sink = await prompt(registry, sid, "three")
    # six messages: over max_messages = 4, so cut to at most 3 (TRIM_TO), starting at a user message
    assert sink.of_type("history_trimmed") == [
        {
            "session_id": sid,
            "type": "history_trimmed",
            "seq": sink.updates[-2]["seq"],
            "dropped_messages": 4,
            "kept_messages": 2,
            "checkpoint": 5,
            "kept_turns": 1,
            "reason": "history message limit exceeded",
        }
    ]
    assert [u["type"] for u in sink.updates[-2:]] == ["history_trimmed", "turn_complete"]
    before = await env.store.transcript.context(sid)
    assert (before.snapshot_id, before.boundary) == (1, 5)
    _outcome, sink = await prompt(registry, sid, "four")
    assert not sink.of_type("history_trimmed")  # four messages: within the limit again

    env.faults.arm("save_snapshot")
    outcome, sink = await prompt(registry, sid, "five")
    assert outcome.stop_reason == "end_turn" and not sink.of_type("history_trimmed"), sink.updates
    assert env.faults.pending("save_snapshot") == 0, "the trim was attempted"
    after = await env.store.transcript.context(sid)
    assert (after.snapshot_id, after.boundary) == (1, 5), "the previous snapshot still rules"
    # the model gets the previous snapshot plus every row after its boundary
    assert await context_lines(registry, sid) == [
        "user: three",
        "assistant: You said: «three»",
        "user: four",
        "assistant: You said: «four»",
        "user: five",
        "assistant: You said: «five»",
        "user: /context",
    ]
    assert (await env.store.transcript.context(sid)).snapshot_id == 2  # storage works again: the next trim commits
    rows, total = await env.store.transcript.messages(sid)
    assert total == 12 and [r.index for r in rows] == list(range(12))  # R-ACP-1: no row deleted or renumbered


@pytest.mark.req("R-ACP-3")
async def test_the_snapshot_excludes_the_system_prompt_and_thoughts(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1", agent_alias="sys")).session.session_id
    for text in ("/think secret-a", "two", "/think secret-b"):
        await prompt(registry, sid, text)
    recovered = await env.store.transcript.context(sid)
    assert recovered.snapshot_id is not None
    query = sa.select(AcpSnapshot.messages).where(AcpSnapshot.session_id == sid)
    stored = await env.db.read(lambda s: s.scalars(query).all())
    assert stored
    for snapshot in stored:
        for message in orjson.loads(snapshot):
            assert message["role"] in ("user", "assistant", "tool"), message  # no system/developer prompt
            assert not set(message) & {"reasoning", "reasoning_content", "thinking", "thought"}, message
            if message["role"] != "user":  # only the prompt that asked for the thought names it
                assert "secret-" not in message["content"] and SYSTEM_PROMPT not in message["content"], message
    assert all(m["role"] in ("user", "assistant", "tool") for m in recovered.messages), recovered.messages
    lines = await context_lines(registry, sid)
    assert lines[0] == f"system: {SYSTEM_PROMPT}" and sum(line.startswith("system:") for line in lines) == 1


# --------------------------------------------------------------------------------------- close / resume


@pytest.mark.req("R-ACP-8")
async def test_close_then_resume_or_prompt_rehydrates(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await prompt(registry, sid, "one")
    await registry.close(ALICE, sid)
    assert sid not in registry.live
    opened = await registry.open(ALICE, session_id=sid)
    assert opened.resumed is True and opened.message_count == 2
    await registry.close(ALICE, sid)
    outcome, _sink = await prompt(registry, sid, "two")
    assert outcome.content == "You said: «two»" and sid in registry.live


@pytest.mark.req("R-ACP-8")
async def test_a_chat_session_can_be_prompted_and_closing_it_ends_it(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="c1", mode="chat")).session.session_id
    outcome, sink = await prompt(registry, sid, "chat hello")
    assert outcome.stop_reason == "end_turn" and outcome.content == "You said: «chat hello»"
    _o, sink = await prompt(registry, sid, "two")
    assert not sink.of_type("history_trimmed")
    _o, sink = await prompt(registry, sid, "three")  # with it, over `max_messages`: trimmed first (R-MULTI-5)
    assert [t["dropped_messages"] for t in sink.of_type("history_trimmed")] == [2]
    rows, total = await env.store.transcript.messages(sid, mode="chat")
    assert total == 6 and rows[0].content == "chat hello"
    await registry.close(ALICE, sid)
    with pytest.raises(SessionNotFound):
        await registry.turns.prompt(ALICE, sid, "again", sink=None, client=NoClient())


@pytest.mark.req("R-SES-1")
async def test_a_stored_chat_session_resumes_with_its_history_and_owner_also_for_an_admin(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="c1", mode="chat", surface="gateway")).session.session_id
    await prompt(registry, sid, "hello")
    assert registry.release(sid)  # what the gateway does between webhook calls
    opened = await registry.open(ALICE, session_id=sid, mode="chat")
    assert opened.resumed is True and opened.message_count == 2
    assert opened.session.surface == "gateway"  # the stored session, not one made up from this request
    assert registry.release(sid)
    admin = Principal(id="owner", admin=True)
    opened = await registry.open(admin, session_id=sid, mode="chat")
    assert opened.resumed is True and opened.session.owner == "alice"  # admins may resume anyone's
    await registry.close(admin, sid)
    with pytest.raises(SessionNotFound):  # a closed chat session is gone (R-ACP-8)
        await registry.open(ALICE, session_id=sid, mode="chat")


# ---------------------------------------------------------------------------------------- kill / delete


async def _running(registry: SessionRegistry, sid: str) -> tuple[asyncio.Task[Any], Sink]:
    sink = Sink()
    task = asyncio.get_running_loop().create_task(
        registry.turns.prompt(ALICE, sid, "/sleep 5", sink=sink, client=NoClient())
    )
    for _ in range(300):
        if len(sink.of_type("agent_message_chunk")) >= 3:
            return task, sink
        await asyncio.sleep(0.01)
    raise AssertionError("the turn never streamed")


@pytest.mark.req("R-ACP-11")
@pytest.mark.req("R-ACP-10")
@pytest.mark.parametrize("point", ["kill", "delete"])
async def test_failed_kill_or_delete_on_an_idle_session_keeps_the_live_owner(env: Env, point: str) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    live = registry.live[sid]
    watcher = Sink()
    live.watch(watcher)
    await prompt(registry, sid, "one")
    env.faults.arm(point)
    with pytest.raises(StorageFault):
        await getattr(registry, point)(ALICE, sid)
    # the storage step comes first: on failure the same live generation stays, with its watchers
    assert registry.live[sid] is live and watcher in live.watchers
    record = await env.store.get(sid)
    assert record is not None and not record.killed and record.message_count == 2
    outcome, _sink = await prompt(registry, sid, "still here")
    assert outcome.stop_reason == "end_turn"
    await getattr(registry, point)(ALICE, sid)
    assert sid not in registry.live
    record = await env.store.get(sid)
    assert (record is None) if point == "delete" else (record is not None and record.killed)


@pytest.mark.req("R-ACP-11")
@pytest.mark.parametrize("point", ["kill", "delete"])
async def test_failed_kill_or_delete_during_a_turn_drops_the_live_owner_not_the_row(env: Env, point: str) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await prompt(registry, sid, "before")
    task, _sink = await _running(registry, sid)
    env.faults.arm(point)
    with pytest.raises(StorageFault):
        await getattr(registry, point)(ALICE, sid)
    outcome = await asyncio.wait_for(task, 5)
    assert outcome.stop_reason == "cancelled"  # cancellation was signalled before the storage step
    assert sid not in registry.live, "a forcibly cancelled live generation is not restored"
    record = await env.store.get(sid)
    assert record is not None and not record.killed
    rows, total = await env.store.transcript.messages(sid)
    assert [r.role for r in rows] == ["user", "assistant", "user", "assistant"] and total == 4
    assert rows[3].content == outcome.content and rows[3].complete
    assert sorted(str(reason) for _surface, reason in (await turns(env, sid)).values()) == ["cancelled", "end_turn"]
    # once storage works again the session rehydrates from the durable row (no marker: the turn ended)
    lines = await context_lines(registry, sid)
    assert lines[-3:] == ["user: /sleep 5", f"assistant: {outcome.content}", "user: /context"], lines


@pytest.mark.req("R-LIM")
@pytest.mark.parametrize("point", ["cancel", "kill", "delete"])
async def test_a_turn_ended_mid_stream_leaves_no_cyclic_garbage(env: Env, point: str) -> None:
    """A cancelled turn's exception held its frame, whose `live` held the cancelled task: the session, its turn's
    text and the prompter's connection stayed for the cyclic GC (benchmarks/soak.py's slow readers; docs/limits.md
    "Garbage")."""
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="s1")).session.session_id
    await prompt(registry, sid, "before")
    with cyclic_garbage() as garbage:
        task, _sink = await _running(registry, sid)
        if point == "cancel":
            registry.turns.cancel(ALICE, sid)
        else:
            await getattr(registry, point)(ALICE, sid)
        outcome = await asyncio.wait_for(task, 5)
        assert outcome.stop_reason == "cancelled"
        if point == "cancel":  # the session outlives a cancelled turn; closing it lets go of the live session
            await registry.close(ALICE, sid)
        assert sid not in registry.live
        del task, outcome, _sink
    ours = {"LiveSession", "TurnOutcome", "TurnUpdates", "_Text", "Task", "CancelledError"}
    assert not ours & set(garbage), garbage


@pytest.mark.req("R-ACP-10")
async def test_delete_leaves_a_live_chat_session_with_the_same_id(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, session_id="x1")).session.session_id
    await prompt(registry, sid, "acp words")
    await registry.close(ALICE, sid)
    chat = await registry.open(ALICE, session_id=sid, mode="chat")
    assert chat.resumed is False and chat.session.mode == "chat"
    await prompt(registry, sid, "chat words")
    await registry.delete(ALICE, sid)
    assert await env.store.get(sid) is None, "the ACP row is removed"
    assert registry.live[sid] is chat.session, "the live chat session is untouched"
    rows, total = await env.store.transcript.messages(sid, mode="chat")
    assert [r.content for r in rows] == ["chat words", "You said: «chat words»"] and total == 2
