"""The turn runner's checkpoints (R-ACP-4), on a real store: the user row first, assistant text at the first chunk
and then on a 0.25 s clock (also when the stream stalls), sealed at every tool boundary and on cancellation.

The provider is scripted step by step here, so a test decides exactly when chunks arrive and when the stream stalls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from gc_probe import cyclic_garbage
from waiting import until

from app.agents.base import Elicitation, Message, TextDelta, ThoughtDelta, ToolCall, ToolContext, ToolSpec
from app.sessions.events import SessionEvent
from app.sessions.live.session import LiveSession
from app.sessions.live.turn import TEXT_CHECKPOINT_SECS, TurnOutcome, run_turn
from app.sessions.live.turn_settings import TurnSettings
from app.sessions.store.session_store import SessionStore, TranscriptRow

# R-STORE-2: runs on SQLite and, in the CI PostgreSQL pass, on PostgreSQL (tests/db_backend.py).
pytestmark = pytest.mark.req("R-STORE-2")

SID = "s1"


class NoClient:
    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        return Elicitation("unavailable", reason="no client in this test")


class Script:
    """A provider whose steps are lists of actions: ("text", s), ("thought", s), ("call", ToolCall),
    ("sleep", secs), ("wait", asyncio.Event). `reached[i]` is set when step i has yielded everything before a wait."""

    def __init__(self, *steps: list[tuple[str, Any]]) -> None:
        self.steps = list(steps)
        self.calls = 0
        self.given: list[list[Message]] = []

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[Any]:
        self.given.append(list(messages))
        step = self.steps[self.calls]
        self.calls += 1
        for action, value in step:
            if action == "text":
                yield TextDelta(value)
            elif action == "thought":
                yield ThoughtDelta(value)
            elif action == "call":
                yield value
            elif action == "sleep":
                await asyncio.sleep(value)
            elif action == "wait":
                await value.wait()


class SlowTool:
    """A tool that needs no approval and runs until released."""

    spec = ToolSpec("slow", "waits", {"type": "object"})
    needs_approval = False

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        self.started.set()
        await self.release.wait()
        return "slow result"


@pytest.fixture
async def store(store: SessionStore, tmp_path: Path) -> SessionStore:
    """The shared store (tests/unit/conftest.py) with session SID."""
    await store.create(SID, owner="alice", agent_alias="default", workspace_dir=str(tmp_path))
    return store


def live_session(tmp_path: Path) -> LiveSession:
    return LiveSession(SID, "alice", "default", "acp", tmp_path, "rpc")


def settings(tmp_path: Path) -> TurnSettings:
    return TurnSettings(
        max_steps=4,
        system_prompt=None,
        auto_approve=frozenset(),
        approval_timeout_secs=1.0,
        tool_context=ToolContext(session_id=SID, workspace=tmp_path, client=NoClient()),
    )


def start(
    store: Any,
    tmp_path: Path,
    provider: Script,
    tools: dict[str, Any] | None = None,
    prompt: str = "go",
    sending: asyncio.Event | None = None,
    transcript: Any = None,
) -> tuple[asyncio.Task[TurnOutcome], list[dict[str, Any]], TurnOutcome]:
    """The turn as a task; `sending`: while unset, sending text waits (a slow client's send); `transcript`: a
    stand-in for the store's transcript."""
    events: list[dict[str, Any]] = []

    class Recorder:
        async def emit(self, event: SessionEvent) -> None:
            events.append(dict(event))

        async def text(self, chunks: Sequence[str]) -> None:
            events.extend({"session_id": SID, "type": "agent_message_chunk", "text": chunk} for chunk in chunks)
            if sending is not None:
                await sending.wait()

    outcome = TurnOutcome(turn_id="t1")
    task = asyncio.get_running_loop().create_task(
        run_turn(
            live_session(tmp_path),
            prompt,
            turn_id="t1",
            context=[],
            provider=provider,
            tools=tools or {},
            store=transcript or store.transcript,
            updates=Recorder(),
            settings=settings(tmp_path),
            outcome=outcome,
        )
    )
    return task, events, outcome


async def rows(store: SessionStore) -> list[TranscriptRow]:
    return (await store.transcript.messages(SID, limit=1000))[0]


async def assistant_text_is(store: SessionStore, text: str) -> bool:
    found = await rows(store)
    return len(found) > 1 and found[1].content == text


@pytest.mark.req("R-ACP-4")
async def test_user_row_first_then_the_assistant_row_at_the_first_chunk(store: SessionStore, tmp_path: Path) -> None:
    gate, stall = asyncio.Event(), asyncio.Event()
    provider = Script([("wait", gate), ("text", "Hello"), ("wait", stall)])
    task, _events, _outcome = start(store, tmp_path, provider)
    await until(lambda: _has_rows(store, 1))
    assert [(r.role, r.content) for r in await rows(store)] == [("user", "go")]  # before the provider said a word
    gate.set()
    await until(lambda: _has_rows(store, 2))
    second = (await rows(store))[1]
    assert (second.role, second.content, second.complete) == ("assistant", "Hello", False)
    stall.set()
    outcome = await task
    assert outcome.stop_reason == "end_turn"
    # Every chunk was committed already: the turn's last step writes nothing more, and `finish_turn` (the
    # registry's next write) flags the row complete.
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "Hello", False),
    ]
    await store.transcript.finish_turn(SID, "t1", outcome.stop_reason)
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "Hello", True),
    ]


@pytest.mark.req("R-ACP-4")
async def test_text_that_arrived_after_the_last_checkpoint_is_written_when_the_turn_ends(
    store: SessionStore, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    provider = Script([("text", "Hello"), ("wait", gate), ("text", " world")])
    task, _events, _outcome = start(store, tmp_path, provider)
    await until(lambda: _has_rows(store, 2))
    gate.set()
    await task
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "Hello world", True),
    ]


@pytest.mark.req("R-ACP-4")
async def test_text_is_flushed_on_a_clock_when_the_stream_stalls(store: SessionStore, tmp_path: Path) -> None:
    stall = asyncio.Event()
    provider = Script([("text", "one "), ("text", "two "), ("text", "three"), ("wait", stall)])
    task, _events, _outcome = start(store, tmp_path, provider)
    await until(lambda: _has_rows(store, 2))
    # no further chunk arrives: only the timer can write, within its period
    await until(lambda: assistant_text_is(store, "one two three"), TEXT_CHECKPOINT_SECS + 0.2)
    stall.set()
    await task


@pytest.mark.req("R-ACP-4")
async def test_a_chunk_arriving_while_a_flush_is_being_written_is_flushed_too(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer's write takes a while; a chunk that lands during it, followed by a stall, must still reach the
    disk within the checkpoint period (not only when the step ends)."""
    real_update = store.transcript.update_text
    writing = asyncio.Event()

    async def slow_update(*args: Any, **kw: Any) -> None:
        writing.set()
        await asyncio.sleep(0.1)
        await real_update(*args, **kw)

    monkeypatch.setattr(store.transcript, "update_text", slow_update)
    stall = asyncio.Event()
    during = asyncio.Event()

    class Racing(Script):
        async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[Any]:
            yield TextDelta("a")
            yield TextDelta("b")  # starts the flush timer
            await writing.wait()  # the timer's write is in progress...
            yield TextDelta("c")  # ...when this chunk arrives
            during.set()
            await stall.wait()  # and then the stream stalls

    task, _events, _outcome = start(store, tmp_path, Racing())
    await asyncio.wait_for(during.wait(), 3)
    await until(
        lambda: assistant_text_is(store, "abc"),
        2 * TEXT_CHECKPOINT_SECS + 0.3,
        what="a chunk streamed during a flush on disk (not in memory only)",
    )
    stall.set()
    await task
    assert (await rows(store))[1].content == "abc"


@pytest.mark.req("R-ACP-4")
@pytest.mark.req("R-ACP-3")
async def test_text_is_sealed_at_the_tool_boundary(store: SessionStore, tmp_path: Path) -> None:
    tool = SlowTool()
    provider = Script(
        [
            ("thought", "private reasoning"),
            ("text", "Let me "),
            ("text", "check."),
            ("call", ToolCall("c1", "slow", {})),
        ],
        [("text", "Done.")],
    )
    task, events, _outcome = start(store, tmp_path, provider, tools={"slow": tool})
    await asyncio.wait_for(tool.started.wait(), 3)
    # while the tool runs, the step's text is complete and the call is on disk, in that order
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "Let me check.", True),
        ("tool_call", "{}", True),
    ]
    tool.release.set()
    outcome = await task
    assert outcome.stop_reason == "end_turn"
    assert [(r.role, r.content, r.tool_call_id) for r in await rows(store)] == [
        ("user", "go", None),
        ("assistant", "Let me check.", None),
        ("tool_call", "{}", "c1"),
        ("tool_result", "slow result", "c1"),
        ("assistant", "Done.", None),
    ]
    # the thought was streamed but never stored (R-ACP-3)
    assert {"session_id": SID, "type": "agent_thought_chunk", "text": "private reasoning"} in events
    assert all("private reasoning" not in r.content for r in await rows(store))
    # the provider's second step was given the first step's text and call, then the result
    second = provider.given[1]
    assert [(m.role, m.content) for m in second] == [
        ("user", "go"),
        ("assistant", "Let me check."),
        ("tool", "slow result"),
    ]


@pytest.mark.req("R-ACP-4")
async def test_a_cancelled_step_keeps_its_text_exactly_once(store: SessionStore, tmp_path: Path) -> None:
    stall = asyncio.Event()
    provider = Script([("text", "partial "), ("text", "answer"), ("wait", stall)])
    task, _events, outcome = start(store, tmp_path, provider)
    await until(lambda: _has_rows(store, 2))
    await until(lambda: "".join(outcome.streamed) == "partial answer")  # both chunks, then the stall
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "".join(outcome.streamed) == "partial answer"
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "partial answer", True),
    ]
    await asyncio.sleep(TEXT_CHECKPOINT_SECS + 0.1)  # a window: no late timer write reopens or duplicates the row
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "partial answer", True),
    ]


@pytest.mark.req("R-ACP-4")
async def test_a_step_cancelled_while_its_first_chunk_is_sent_keeps_that_text(
    store: SessionStore, tmp_path: Path
) -> None:
    """Regression (a flake of test_chat_resumed_session_shows_a_cancelled_turn_as_cancelled under load): the client
    had been sent "Sleeping for 30 s", Ctrl-C cancelled the turn while that send was still awaited, and the text
    was noted only after the send: the resumed transcript lacked what the client had shown."""
    sending = asyncio.Event()
    provider = Script([("text", "Sleeping for 30 s"), ("wait", asyncio.Event())])
    task, events, _outcome = start(store, tmp_path, provider, sending=sending)
    await until(lambda: any(e["type"] == "agent_message_chunk" for e in events))  # sent; the send still awaited
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "Sleeping for 30 s", True),
    ]


class SlowToReturn:
    """The store's transcript, but an `append` of an assistant row returns only once `returned` is set: its row is
    committed while the caller still waits."""

    def __init__(self, transcript: Any) -> None:
        self._transcript = transcript
        self.committed = asyncio.Event()
        self.returned = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transcript, name)

    async def append(self, session_id: str, **fields: Any) -> int:
        index: int = await self._transcript.append(session_id, **fields)
        if fields.get("role") == "assistant":
            self.committed.set()
            await self.returned.wait()
        return index


@pytest.mark.req("R-ACP-4")
async def test_a_step_cancelled_while_its_first_row_is_written_keeps_its_text_once(
    store: SessionStore, tmp_path: Path
) -> None:
    """The cancel lands while the row of the first chunk is being written: the row is still found and sealed, not
    written a second time."""
    transcript = SlowToReturn(store.transcript)
    provider = Script([("text", "partial "), ("text", "answer"), ("wait", asyncio.Event())])
    task, _events, _outcome = start(store, tmp_path, provider, transcript=transcript)
    await transcript.committed.wait()
    task.cancel()  # cancels what the turn awaits (the shielded write) now, while the write has not returned
    transcript.returned.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [(r.role, r.content, r.complete) for r in await rows(store)] == [
        ("user", "go", True),
        ("assistant", "partial ", True),
    ]


async def _has_rows(store: SessionStore, n: int) -> bool:
    return len(await rows(store)) >= n


@pytest.mark.req("R-LIM")
async def test_a_finished_turn_leaves_no_cyclic_garbage(store: SessionStore, tmp_path: Path) -> None:
    """The text's clock flush, cancelled when the text is sealed, held the text through its exception's frame while
    the text held it: a cycle per turn that only the cyclic GC freed (docs/limits.md "Garbage")."""
    with cyclic_garbage() as garbage:
        task, _events, _outcome = start(store, tmp_path, Script([("text", "a "), ("sleep", 0.01), ("text", "b")]))
        await task
        del task
    assert "_Text" not in garbage, garbage
