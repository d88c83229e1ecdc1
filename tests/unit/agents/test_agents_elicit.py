"""ask_user and poll (R-AGENT-3, R-BIDI-4, R-BIDI-5) with a fake PromptingClient: the exact schemas, the answer on
accept, and a sentence (never an exception) for decline, cancel, unanswered, unavailable and failed. Also the
tool registry."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import Elicitation, Tool, ToolContext
from app.agents.tools import BUILTIN_TOOLS, build_tools, tool_specs
from app.agents.tools.ask_user import AskUserTool
from app.agents.tools.poll import PollTool

pytestmark = [pytest.mark.req("R-AGENT-3"), pytest.mark.req("R-BIDI-5")]


class FakeChannel:
    """Answers every elicitation with `answer` (after `delay`), recording what it was asked."""

    def __init__(self, answer: Elicitation | Exception, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.asked: list[tuple[str, dict[str, Any], float]] = []

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        self.asked.append((message, requested_schema, timeout))
        await asyncio.sleep(self.delay)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class TimingOutChannel:
    """Behaves as the real channel does when the client never answers: waits `timeout`, then "unanswered"."""

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        await asyncio.sleep(timeout)
        return Elicitation(action="unanswered", reason="no answer in time")


def ctx(client: Any, tmp_path: Path, ask_timeout_secs: float = 120.0) -> ToolContext:
    return ToolContext(session_id="s1", workspace=tmp_path, client=client, ask_timeout_secs=ask_timeout_secs)


OUTCOMES = [
    (Elicitation(action="decline"), "The user declined to answer."),
    (Elicitation(action="cancel"), "The user cancelled the question."),
    (Elicitation(action="unanswered"), "No answer: the user did not answer within 120 s."),
    (Elicitation(action="unavailable"), "No answer: no interactive client is attached to this session."),
    (
        Elicitation(action="failed", reason="the connection closed"),
        "No answer: asking the user failed (the connection closed).",
    ),
    (RuntimeError("channel bug"), "No answer: asking the user failed (RuntimeError)."),
]


async def test_ask_user_accept_and_exact_schema(tmp_path: Path) -> None:
    channel = FakeChannel(Elicitation(action="accept", content={"answer": "blue"}))
    result = await AskUserTool().run({"question": "Favourite colour?"}, ctx(channel, tmp_path, 30))
    assert result == "blue"
    assert channel.asked == [
        (
            "Favourite colour?",
            {
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Favourite colour?"}},
                "required": ["answer"],
            },
            30,
        )
    ]


@pytest.mark.parametrize(("answer", "expected"), OUTCOMES)
async def test_ask_user_outcomes_are_sentences(tmp_path: Path, answer: Elicitation | Exception, expected: str) -> None:
    assert await AskUserTool().run({"question": "Continue?"}, ctx(FakeChannel(answer), tmp_path)) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({}, "No answer: the client accepted but sent no `answer` text."),
        ({"answer": ""}, "The user gave an empty answer."),
        ({"answer": 42}, "42"),
    ],
)
async def test_ask_user_odd_accepts(tmp_path: Path, content: dict[str, Any], expected: str) -> None:
    channel = FakeChannel(Elicitation(action="accept", content=content))
    assert await AskUserTool().run({"question": "Q?"}, ctx(channel, tmp_path)) == expected


@pytest.mark.req("R-BIDI-4")
async def test_ask_user_never_answered_continues_after_its_own_timeout(tmp_path: Path) -> None:
    result = await asyncio.wait_for(
        AskUserTool().run({"question": "Q?"}, ctx(TimingOutChannel(), tmp_path, ask_timeout_secs=0.05)), 2
    )
    assert result == "No answer: the user did not answer within 0.05 s."


async def test_poll_accept_and_exact_schema(tmp_path: Path) -> None:
    channel = FakeChannel(Elicitation(action="accept", content={"choice": "tea"}))
    arguments = {"question": "Drink?", "options": ["coffee", "tea", " tea ", ""]}
    assert await PollTool().run(arguments, ctx(channel, tmp_path)) == "tea"
    message, schema, timeout = channel.asked[0]
    assert message == "Drink?" and timeout == 120
    assert schema == {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": ["coffee", "tea"]}},
        "required": ["choice"],
    }


@pytest.mark.parametrize(("answer", "expected"), OUTCOMES)
async def test_poll_outcomes_are_sentences(tmp_path: Path, answer: Elicitation | Exception, expected: str) -> None:
    result = await PollTool().run({"question": "Q?", "options": ["a", "b"]}, ctx(FakeChannel(answer), tmp_path))
    assert result == expected


async def test_poll_choice_outside_the_options(tmp_path: Path) -> None:
    channel = FakeChannel(Elicitation(action="accept", content={"choice": "c"}))
    result = await PollTool().run({"question": "Q?", "options": ["a", "b"]}, ctx(channel, tmp_path))
    assert result == "No valid answer: the client chose 'c', which is not one of the options."
    channel.answer = Elicitation(action="accept", content={})
    assert (await PollTool().run({"question": "Q?", "options": ["a", "b"]}, ctx(channel, tmp_path))).startswith(
        "No answer"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"question": "Q?"},
        {"question": "Q?", "options": ["only"]},
        {"question": "Q?", "options": ["a", 1]},
        {"question": "Q?", "options": "a,b"},
        {"question": "", "options": ["a", "b"]},
    ],
)
async def test_poll_bad_arguments(tmp_path: Path, arguments: dict[str, Any]) -> None:
    channel = FakeChannel(Elicitation(action="decline"))
    assert (await PollTool().run(arguments, ctx(channel, tmp_path))).startswith("Invalid arguments:")
    assert not channel.asked  # nothing was asked


async def test_ask_user_bad_arguments(tmp_path: Path) -> None:
    channel = FakeChannel(Elicitation(action="decline"))
    assert (await AskUserTool().run({"question": " "}, ctx(channel, tmp_path))).startswith("Invalid arguments:")
    assert not channel.asked


def test_registry() -> None:
    assert list(BUILTIN_TOOLS) == ["bash", "read_file", "write_file", "ask_user", "poll"]
    # R-GUARD-1: bash and write_file ask by default; reading and asking the user do not.
    assert {name for name, tool in BUILTIN_TOOLS.items() if tool.needs_approval} == {"bash", "write_file"}
    tools = build_tools(["poll", "bash"])
    assert list(tools) == ["poll", "bash"] and tools["bash"] is BUILTIN_TOOLS["bash"]
    assert [s.name for s in tool_specs(tools)] == ["poll", "bash"]
    with pytest.raises(ValueError, match="unknown tool 'rm'"):
        build_tools(["rm"])


@pytest.mark.parametrize("name", list(BUILTIN_TOOLS))
def test_every_spec_is_an_object_schema_with_its_required_properties(name: str) -> None:
    tool: Tool = BUILTIN_TOOLS[name]
    params = tool.spec.parameters
    assert tool.spec.name == name and tool.spec.description
    assert params["type"] == "object"
    assert set(params["required"]) <= set(params["properties"])
