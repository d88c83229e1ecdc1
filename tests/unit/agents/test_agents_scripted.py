"""The scripted provider (R-AGENT-2): every directive of its grammar, chunking, context listing, tool-call ids."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from waiting import until

from app.agents.base import (
    Message,
    ProviderError,
    ProviderEvent,
    TextChunks,
    TextDelta,
    ThoughtDelta,
    ToolCall,
    Usage,
)
from app.agents.scripted import FAIL_MESSAGE, MAX_STREAM_CHUNKS, STREAM_BURST, ScriptedProvider, split_chunks

pytestmark = pytest.mark.req("R-AGENT-2")


async def step(messages: Sequence[Message], provider: ScriptedProvider | None = None) -> list[ProviderEvent]:
    """One step's events but its closing `Usage` (checked here: one, last; test_usage_* look at it)."""
    events = [event async for event in (provider or ScriptedProvider()).stream(messages, [])]
    assert isinstance(events[-1], Usage) and not any(isinstance(e, Usage) for e in events[:-1]), events
    return events[:-1]


async def usage_of(messages: Sequence[Message]) -> Usage:
    events = [event async for event in ScriptedProvider().stream(messages, [])]
    assert isinstance(events[-1], Usage)
    return events[-1]


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ProviderEvent]) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


async def turn(history: list[Message], prompt: str, results: dict[str, str]) -> tuple[list[ProviderEvent], str]:
    """Drive one turn the way the turn runner does: tool calls are answered from `results` (by tool name) and
    appended with their results, until a step asks for no tool. Returns every event and the final text."""
    history.append(Message("user", prompt))
    events: list[ProviderEvent] = []
    for _ in range(8):
        step_events = await step(history)
        events += step_events
        calls = calls_of(step_events)
        if not calls:
            history.append(Message("assistant", text_of(step_events)))
            return events, text_of(step_events)
        history.append(Message("assistant", text_of(step_events), tool_calls=tuple(calls)))
        for call in calls:
            history.append(Message("tool", results[call.name], tool_call_id=call.id, name=call.name))
    raise AssertionError("the scripted provider looped on tool calls")


async def test_plain_text_is_quoted_in_several_chunks() -> None:
    events = await step([Message("user", "  the quick brown fox jumps over the lazy dog  ")])
    chunks = [e.text for e in events if isinstance(e, TextDelta)]
    assert all(isinstance(e, TextDelta) for e in events)
    assert "".join(chunks) == "You said: «the quick brown fox jumps over the lazy dog»"
    assert 3 <= len(chunks) <= 8


async def test_answers_the_last_user_message_only() -> None:
    history = [Message("user", "/fail"), Message("assistant", "earlier"), Message("user", "second")]
    assert text_of(await step(history)) == "You said: «second»"


async def test_trailing_system_prompt_does_not_hide_the_prompt() -> None:
    events = await step([Message("user", "/bash ls"), Message("system", "be brief")])
    assert calls_of(events)[0].name == "bash"


async def test_unknown_directive_is_plain_text() -> None:
    assert text_of(await step([Message("user", "/nope 1 2")])) == "You said: «/nope 1 2»"


async def test_no_user_message() -> None:
    assert "no user message" in text_of(await step([Message("system", "s")]))


@given(st.text())
def test_split_chunks_concatenates_to_the_text(text: str) -> None:
    chunks = split_chunks(text)
    assert "".join(chunks) == text
    assert len(chunks) <= 8
    assert all(chunks)
    if len(text.split()) >= 3:
        assert len(chunks) >= 3


async def test_think_streams_a_thought_then_a_reply() -> None:
    events = await step([Message("user", "/think about the plan")])
    assert events[0] == ThoughtDelta("about the plan")
    reply = text_of(events)
    assert reply and "about the plan" not in reply  # the thought is not repeated in the visible reply
    assert not calls_of(events)


async def test_bash_calls_the_tool_then_shows_its_output() -> None:
    history: list[Message] = []
    events, final = await turn(history, "/bash echo hi && ls", {"bash": "hi\nfile.txt\n[exit code 0]"})
    assert calls_of(events) == [ToolCall("tc_1", "bash", {"command": "echo hi && ls"})]
    assert final == "Command output:\nhi\nfile.txt\n[exit code 0]"
    # The tool-call step streams no text: the turn's text is the reply after the result.
    assert isinstance(events[0], ToolCall)


async def test_bash_keeps_a_multi_line_command() -> None:
    events = await step([Message("user", "/bash echo a\necho b")])
    assert calls_of(events)[0].arguments == {"command": "echo a\necho b"}


async def test_ask_quotes_the_answer() -> None:
    events, final = await turn([], "/ask What is your name?", {"ask_user": "Ada"})
    assert calls_of(events)[0].name == "ask_user"
    assert calls_of(events)[0].arguments == {"question": "What is your name?"}
    assert final == "Answer: «Ada»"


async def test_poll_quotes_the_choice() -> None:
    events, final = await turn([], "/poll Which colour? | red | green | red |  | blue", {"poll": "green"})
    call = calls_of(events)[0]
    assert (call.name, call.arguments) == ("poll", {"question": "Which colour?", "options": ["red", "green", "blue"]})
    assert final == "Choice: «green»"


async def test_write_and_read_map_to_file_tools() -> None:
    history: list[Message] = []
    events, final = await turn(history, "/write notes/a.txt | x | y", {"write_file": "Wrote 5 bytes."})
    assert calls_of(events)[0].arguments == {"path": "notes/a.txt", "content": "x | y"}
    assert final == "write_file: Wrote 5 bytes."
    events, final = await turn(history, "/read notes/a.txt", {"read_file": "x | y"})
    assert calls_of(events)[0] == ToolCall("tc_2", "read_file", {"path": "notes/a.txt"})
    assert final == "File contents:\nx | y"


@pytest.mark.req("R-MCP-5")
async def test_tool_calls_any_tool_by_name_with_json_arguments() -> None:
    history: list[Message] = []
    events, final = await turn(history, '/tool mcp__ev__echo {"message": "hi there"}', {"mcp__ev__echo": "Echo: hi"})
    assert calls_of(events)[0] == ToolCall("tc_1", "mcp__ev__echo", {"message": "hi there"})
    assert final == "mcp__ev__echo returned:\nEcho: hi"
    events, _ = await turn(history, "/tool read_file", {"read_file": "x"})  # no JSON: no arguments
    assert calls_of(events)[0].arguments == {}


@pytest.mark.req("R-MCP-5")
async def test_tools_calls_one_tool_per_line_each_in_a_step_of_its_own() -> None:
    history: list[Message] = []
    prompt = '/tools mcp__s__grow {}\nmcp__s__extra {"n": 1}\n'
    events, final = await turn(history, prompt, {"mcp__s__grow": "grown", "mcp__s__extra": "here"})
    assert calls_of(events) == [ToolCall("tc_1", "mcp__s__grow", {}), ToolCall("tc_2", "mcp__s__extra", {"n": 1})]
    assert final == "mcp__s__extra returned:\nhere"
    events, _ = await turn(history, "/tools a {}\nb [1]", {"a": "x"})  # a bad line ends the chain
    assert [c.name for c in calls_of(events)] == ["a"]


@pytest.mark.parametrize(
    "prompt",
    [
        "/bash",
        "/ask  ",
        "/poll Q | only",
        "/poll | a | b",
        "/write p",
        "/read",
        "/tool",
        "/tool x [1]",
        "/tool x {",
        "/tools",
        "/tools x [1]\ny {}",
    ],
)
async def test_directive_without_arguments_answers_with_usage(prompt: str) -> None:
    events = await step([Message("user", prompt)])
    assert not calls_of(events)
    assert text_of(events).startswith("Usage: /")


async def test_tool_call_ids_are_unique_across_turns() -> None:
    history: list[Message] = []
    ids = []
    for prompt in ["/bash a", "hello", "/ask q", "/poll q | a | b", "/bash b"]:
        events, _ = await turn(history, prompt, {"bash": "x", "ask_user": "y", "poll": "a"})
        ids += [c.id for c in calls_of(events)]
    assert ids == ["tc_1", "tc_2", "tc_3", "tc_4"]


async def test_tool_call_ids_continue_after_the_context_is_trimmed() -> None:
    history: list[Message] = []
    for prompt in ["/bash a", "/bash b", "/bash c"]:
        await turn(history, prompt, {"bash": "x"})
    trimmed = history[-4:]  # keeps only the last turn: its tc_3 call and result
    assert trimmed[1].tool_calls[0].id == "tc_3"
    events, _ = await turn(trimmed, "/bash d", {"bash": "x"})
    assert calls_of(events)[0].id == "tc_4"


async def test_fail_raises_a_provider_error() -> None:
    with pytest.raises(ProviderError) as info:
        await step([Message("user", "/fail")])
    assert str(info.value) == FAIL_MESSAGE == "scripted provider failure (requested by /fail)"


async def test_context_lists_every_message_given() -> None:
    long = "x" * 100
    history = [
        Message("system", "You are helpful."),
        Message("user", "hello"),
        Message("assistant", "", tool_calls=(ToolCall("tc_1", "bash", {"command": "ls"}),)),
        Message("tool", long, tool_call_id="tc_1", name="bash"),
        Message("assistant", "line one\nline two"),
        Message("user", "/context"),
    ]
    lines = text_of(await step(history)).split("\n")
    assert lines == [
        "system: You are helpful.",
        "user: hello",
        "assistant: ",
        f"tool: {'x' * 80}",
        "assistant: line one line two",
        "user: /context",
    ]


async def test_sleep_streams_for_the_given_time() -> None:
    started = time.monotonic()
    events = await step([Message("user", "/sleep 0.35")], ScriptedProvider(tick_secs=0.1))
    elapsed = time.monotonic() - started
    assert 0.35 <= elapsed < 1.0
    assert len(events) >= 5  # a header, a dot per tick, a footer
    assert text_of(events).startswith("Sleeping for 0.35 s") and text_of(events).endswith("Done.")


@pytest.mark.parametrize("arg", ["soon", "-1", "nan", "100000"])
async def test_sleep_with_a_bad_duration_answers_with_usage(arg: str) -> None:
    assert text_of(await step([Message("user", f"/sleep {arg}")])).startswith("Usage: /sleep")


@pytest.mark.parametrize("count", [1, STREAM_BURST, STREAM_BURST + 1, 3 * STREAM_BURST - 7])
async def test_stream_yields_count_chunks_in_bursts(count: int) -> None:
    events = await step([Message("user", f"/stream {count}")])
    assert all(isinstance(e, TextChunks) and 0 < len(e.texts) <= STREAM_BURST for e in events)
    chunks = [text for e in events if isinstance(e, TextChunks) for text in e.texts]
    assert chunks == ["lorem "] * count


@pytest.mark.parametrize("arg", ["", "0", "-5", "ten", str(MAX_STREAM_CHUNKS + 1)])
async def test_stream_with_a_bad_count_answers_with_usage(arg: str) -> None:
    assert text_of(await step([Message("user", f"/stream {arg}")])).startswith("Usage: /stream")


async def test_sleep_is_cancelled_promptly() -> None:
    received: list[ProviderEvent] = []

    async def consume() -> None:
        async for event in ScriptedProvider().stream([Message("user", "/sleep 30")], []):
            received.append(event)

    task = asyncio.create_task(consume())
    await until(lambda: received, 2)  # it is streaming
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled_at < 0.5


async def test_chunk_delay_spaces_the_chunks() -> None:
    started = time.monotonic()
    events = await step([Message("user", "one two three four")], ScriptedProvider(chunk_delay=0.02))
    assert time.monotonic() - started >= 0.02 * (len(events) - 1)


@pytest.mark.req("R-AGENT-2")
async def test_regression_sleep_does_not_spin_when_sub_millisecond_waits_return_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by benchmarks/kill_kit.py: under uvloop (millisecond timers and loop clock) a wait under 1 ms returned
    at once with the clock unchanged, and `/sleep 1.9` streamed 98 dots instead of about 19. Here the clock moves
    only by the waits of 1 ms or more, as there."""
    import app.agents.scripted as scripted

    now = [1000.0]
    real_sleep = asyncio.sleep

    async def millisecond_timers(delay: float) -> None:
        if delay >= 0.001:
            now[0] += delay
        await real_sleep(0)

    monkeypatch.setattr(scripted.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(scripted.asyncio, "sleep", millisecond_timers)
    provider = scripted.ScriptedProvider(tick_secs=0.01)
    dots = 0
    async for event in provider._sleep("0.05"):  # the provider's own sleep is the subject, on a fake clock
        dots += getattr(event, "text", None) == "."
        assert dots <= 7, "the sleep loop spins"
    assert 4 <= dots <= 6


@pytest.mark.req("R-MODEL-5")
async def test_usage_counts_words_in_and_out() -> None:
    history = [Message("system", "be brief"), Message("user", "the quick brown fox")]
    # in: 2 + 4 words; out: "You said: «the quick brown fox»" is 6 words
    assert await usage_of(history) == Usage(input_tokens=6, output_tokens=6)
    assert await usage_of([Message("user", "/think deep thoughts here")]) == Usage(
        4, 3 + 5
    )  # the thought, then "I have thought it over."
    # a tool call's argument values count as its output
    assert await usage_of([Message("user", "/bash ls -l /tmp")]) == Usage(4, 3)
    assert await usage_of([Message("user", "/stream 1000")]) == Usage(2, 1000)
    assert await usage_of([]) == Usage(0, 7)  # "There is no user message to answer."


@pytest.mark.req("R-MODEL-5")
async def test_a_failed_step_reports_no_usage() -> None:
    with pytest.raises(ProviderError):
        await usage_of([Message("user", "/fail")])
