"""SessionStore: retained-context snapshots, provider-safe replay, surfaces and interruption recovery."""

from __future__ import annotations

from typing import Any

import pytest

from app.sessions.store.replay import provider_safe, rows_to_messages
from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import TranscriptRow
from app.storage import utcnow


@pytest.fixture
async def store(store: SessionStore) -> SessionStore:
    """The shared store (tests/unit/conftest.py) with session s1."""
    await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
    return store


async def _say(
    store: SessionStore, role: str, content: str, *, turn: str = "t1", surface: str = "rpc", **kw: Any
) -> int:
    return await store.transcript.append("s1", role=role, content=content, turn_id=turn, surface=surface, **kw)  # type: ignore[arg-type]


async def _tool_turn(store: SessionStore, turn: str, *, answered: bool = True) -> None:
    await _say(store, "user", f"{turn}: run ls", turn=turn)
    await _say(store, "assistant", "Running.", turn=turn)
    await _say(store, "tool_call", '{"cmd":"ls"}', turn=turn, tool_call_id=f"{turn}_tc", name="bash")
    if answered:
        await _say(store, "tool_result", "a b", turn=turn, tool_call_id=f"{turn}_tc", name="bash")
        await _say(store, "assistant", "Done.", turn=turn)


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}


# -- replay ------------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-6")
async def test_legacy_replay_is_the_transcript_in_openai_shape(store: SessionStore) -> None:
    await _tool_turn(store, "t1")
    await store.transcript.finish_turn("s1", "t1", "end_turn")
    context = await store.transcript.context("s1")
    assert context.snapshot_id is None and context.boundary == -1 and context.replayed_rows == 5
    assert context.messages == [
        {"role": "user", "content": "t1: run ls"},
        {"role": "assistant", "content": "Running.", "tool_calls": [_call("t1_tc")]},
        {"role": "tool", "tool_call_id": "t1_tc", "name": "bash", "content": "a b"},
        {"role": "assistant", "content": "Done."},
    ]
    assert context.covers == 4 and context.next_index == 5


@pytest.mark.req("R-ACP-6")
async def test_legacy_replay_drops_markers_and_tool_calls_without_result(store: SessionStore) -> None:
    await _tool_turn(store, "t1", answered=False)  # crash between the call and its result
    assert await store.transcript.recover_interrupted("s1") is True
    context = await store.transcript.context("s1")
    assert context.messages == [
        {"role": "user", "content": "t1: run ls"},
        {"role": "assistant", "content": "Running."},
    ]
    assert all("interrupted" not in str(m) for m in context.messages)


@pytest.mark.req("R-ACP-3")
async def test_thought_rows_are_visible_but_never_replayed(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    await _say(store, "thought", "hmm")
    await _say(store, "assistant", "Hello")
    assert [m["role"] for m in (await store.transcript.context("s1")).messages] == ["user", "assistant"]
    assert [r.role for r in (await store.transcript.messages("s1"))[0]] == ["user", "thought", "assistant"]


def test_provider_safe_drops_orphan_results_and_keeps_answered_parallel_calls() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "early", "name": "bash", "content": "answers nothing before it"},
        {"role": "assistant", "content": "", "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "name": "bash", "content": "A"},
        {"role": "tool", "tool_call_id": "a", "name": "bash", "content": "duplicate"},
    ]
    assert provider_safe(messages) == [
        {"role": "assistant", "content": "", "tool_calls": [_call("a")]},
        {"role": "tool", "tool_call_id": "a", "name": "bash", "content": "A"},
    ]


def test_consecutive_tool_calls_join_one_assistant_message() -> None:
    def row(index: int, role: str, content: str = "", call: str | None = None) -> TranscriptRow:
        name = "bash" if call else None
        return TranscriptRow(index, role, content, call, name, None, "t", "rpc", True, utcnow())  # type: ignore[arg-type]

    out = rows_to_messages([row(0, "user", "q"), row(1, "tool_call", "{}", "x"), row(2, "tool_call", "{}", "y")])
    assert out[1]["role"] == "assistant" and [c["id"] for c in out[1]["tool_calls"]] == ["x", "y"]


# -- snapshots ---------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-5")
async def test_context_is_the_snapshot_plus_rows_after_its_boundary(store: SessionStore) -> None:
    await _tool_turn(store, "t1")
    await _say(store, "user", "q2", turn="t2")
    await _say(store, "assistant", "a2", turn="t2")
    before = await store.transcript.context("s1")
    kept = before.messages[-2:]  # a trim keeping the last exchange
    snapshot_id = await store.transcript.save_snapshot("s1", kept, before.covers)
    await _say(store, "user", "next", turn="t3")
    after = await store.transcript.context("s1")
    assert (after.snapshot_id, after.boundary, after.replayed_rows) == (snapshot_id, 6, 1)
    assert after.messages == [*kept, {"role": "user", "content": "next"}]


@pytest.mark.req("R-ACP-6")
async def test_replay_on_top_of_a_snapshot_stays_provider_safe(store: SessionStore) -> None:
    await _tool_turn(store, "t1")
    # A snapshot cut between a call and its result: the result left behind answers nothing.
    await store.transcript.save_snapshot("s1", [{"role": "user", "content": "t1: run ls"}], 2)
    assert (await store.transcript.context("s1")).messages == [
        {"role": "user", "content": "t1: run ls"},
        {"role": "assistant", "content": "Done."},
    ]


@pytest.mark.req("R-ACP-1")
async def test_trimming_never_renumbers_the_transcript(store: SessionStore) -> None:
    for n in range(3):
        await _say(store, "user", f"q{n}", turn=f"t{n}")
    await store.transcript.save_snapshot("s1", [{"role": "user", "content": "q2"}], 2)
    assert await _say(store, "user", "q3", turn="t3") == 3
    rows, total = await store.transcript.messages("s1")
    assert total == 4 and [(r.index, r.content) for r in rows] == [(0, "q0"), (1, "q1"), (2, "q2"), (3, "q3")]


@pytest.mark.req("R-ACP-6")
async def test_an_empty_snapshot_is_authoritative(store: SessionStore) -> None:
    await _tool_turn(store, "t1")
    await store.transcript.save_snapshot("s1", [], 4)
    context = await store.transcript.context("s1")
    assert context.messages == [] and context.snapshot_id is not None
    await _say(store, "user", "fresh", turn="t2")
    assert (await store.transcript.context("s1")).messages == [{"role": "user", "content": "fresh"}]


@pytest.mark.req("R-ACP-3")
async def test_snapshots_never_keep_system_prompts_or_reasoning(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    await store.transcript.save_snapshot(
        "s1",
        [
            {"role": "system", "content": "You are a runtime prompt"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello", "reasoning_content": "secret thoughts"},
        ],
        0,
    )
    assert (await store.transcript.context("s1")).messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello"},
    ]


async def test_save_snapshot_checks_its_boundary(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    with pytest.raises(ValueError, match="boundary"):
        await store.transcript.save_snapshot("s1", [], 1)
    await store.transcript.save_snapshot("s1", [], -1)  # covers nothing: every row is replayed on top
    assert (await store.transcript.context("s1")).messages == [{"role": "user", "content": "hi"}]


async def test_only_the_newest_snapshots_are_retained(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    ids = [await store.transcript.save_snapshot("s1", [{"role": "user", "content": str(n)}], 0) for n in range(5)]
    assert ids == [1, 2, 3, 4, 5]
    context = await store.transcript.context("s1")
    assert context.snapshot_id == 5 and context.messages[0]["content"] == "4"


# -- surfaces ------------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-7")
async def test_context_only_considers_rows_of_a_compatible_surface(store: SessionStore) -> None:
    await _say(store, "user", "over rpc", surface="rpc")
    await _say(store, "user", "over the panel", turn="g1", surface="gateway")
    assert (await store.transcript.context("s1", surface="rpc")).messages == [{"role": "user", "content": "over rpc"}]
    assert (await store.transcript.context("s1", surface="gateway")).messages == [
        {"role": "user", "content": "over the panel"}
    ]


@pytest.mark.req("R-ACP-7")
async def test_rpc_recovery_leaves_gateway_rows_untouched(store: SessionStore) -> None:
    await _say(store, "user", "panel prompt", turn="g1", surface="gateway")
    await _say(store, "assistant", "half", turn="g1", surface="gateway", complete=False)
    assert await store.transcript.recover_interrupted("s1", surface="rpc") is False
    rows, total = await store.transcript.messages("s1")
    assert total == 2 and rows[-1].complete is False  # the original checkpoint, still inspectable
    assert await store.transcript.recover_interrupted("s1", surface="gateway") is True
    rows, total = await store.transcript.messages("s1")
    assert total == 3 and rows[1].complete and (rows[2].marker, rows[2].surface) == ("interrupted", "gateway")


# -- recovery ----------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-5")
async def test_recovery_keeps_progress_once_and_appends_one_marker(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    index = await _say(store, "assistant", "Hel", complete=False)
    await store.transcript.update_text("s1", index, "Hello wor", complete=False)  # the last checkpoint before the crash

    assert await store.transcript.recover_interrupted("s1") is True
    assert await store.transcript.recover_interrupted("s1") is False  # idempotent
    rows, total = await store.transcript.messages("s1")
    assert total == 3
    assert [(r.role, r.content, r.complete, r.marker) for r in rows[1:]] == [
        ("assistant", "Hello wor", True, None),
        ("marker", rows[2].content, True, "interrupted"),
    ]
    assert rows[2].turn_id == "t1"
    assert (await store.transcript.context("s1")).messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello wor"},
    ]


@pytest.mark.req("R-ACP-5")
async def test_a_turn_with_no_terminal_record_is_interrupted_even_when_its_rows_are_complete(
    store: SessionStore,
) -> None:
    await _tool_turn(store, "t1")  # all rows complete, but finish_turn never ran
    assert await store.transcript.recover_interrupted("s1") is True
    rows, _ = await store.transcript.messages("s1")
    assert rows[-1].marker == "interrupted"


async def test_finished_turns_need_no_recovery(store: SessionStore) -> None:
    await _say(store, "user", "hi")
    index = await _say(store, "assistant", "Hel", complete=False)
    await store.transcript.finish_turn("s1", "t1", "cancelled")  # completes the streaming row too
    assert await store.transcript.recover_interrupted("s1") is False
    rows, total = await store.transcript.messages("s1")
    assert total == 2 and rows[index].complete
    await store.transcript.finish_turn("s1", "t2", "failed")  # a turn that never wrote a row
    assert await store.transcript.recover_interrupted("s1") is False


@pytest.mark.req("R-ACP-5")
async def test_recovery_after_a_snapshot_replays_the_cut_turn_on_top(store: SessionStore) -> None:
    await _say(store, "user", "q0", turn="t0")
    await store.transcript.finish_turn("s1", "t0", "end_turn")
    await store.transcript.save_snapshot("s1", [{"role": "user", "content": "q0"}], 0)
    await _tool_turn(store, "t1", answered=False)
    assert await store.transcript.recover_interrupted("s1") is True
    assert (await store.transcript.context("s1")).messages == [
        {"role": "user", "content": "q0"},
        {"role": "user", "content": "t1: run ls"},
        {"role": "assistant", "content": "Running."},
    ]
