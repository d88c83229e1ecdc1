"""The anthropic provider against httpx.MockTransport (R-MODEL-1): the Messages-API request (system prompt, tool_use
and tool_result blocks, headers), the streamed events (text, thinking, input_json_delta, several tool calls), usage
with cache tokens, a message that comes whole, and failures. tests/e2e/test_e2e_providers_litellm.py runs the same
provider against LiteLLM's proxy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import orjson
import pytest

from app.agents.base import (
    Message,
    ProviderError,
    TextDelta,
    ThoughtDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from app.agents.providers import build_provider
from app.agents.providers.anthropic import (
    DEFAULT_MAX_TOKENS,
    AnthropicProvider,
    messages_url,
    models_url,
    to_anthropic_messages,
)
from app.agents.providers.http import HttpProvider
from app.config.schema import Provider as ProviderConfig
from app.config.secret import Secret

pytestmark = pytest.mark.req("R-MODEL-1")

KEY = "sk-ant-test-0123456789"
BASH = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpProvider, "backoff_secs", 0.001)


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n".encode() for e in events)


def start(input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    return {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": usage}}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def block(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": fields}


def stop(output_tokens: int, reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


TOOL_STREAM = sse(
    start(input_tokens=25, cache_read=100, cache_write=7),
    {"type": "ping"},
    block(0, type="thinking", thinking=""),
    delta(0, type="thinking_delta", thinking="The user wants "),
    delta(0, type="thinking_delta", thinking="files."),
    delta(0, type="signature_delta", signature="sig"),
    {"type": "content_block_stop", "index": 0},
    block(1, type="text", text=""),
    delta(1, type="text_delta", text="Let me "),
    delta(1, type="text_delta", text="look."),
    block(2, type="tool_use", id="toolu_a", name="bash", input={}),
    delta(2, type="input_json_delta", partial_json=""),
    delta(2, type="input_json_delta", partial_json='{"command": '),
    delta(2, type="input_json_delta", partial_json='"ls -l"}'),
    block(3, type="tool_use", id="toolu_b", name="read_file", input={}),
    delta(3, type="input_json_delta", partial_json='{"path": "a.txt"}'),
    *stop(42, "tool_use"),
)


class Recorder:
    def __init__(self, *responses: httpx.Response | Exception) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def body(self) -> dict[str, Any]:
        decoded: dict[str, Any] = orjson.loads(self.requests[-1].content)
        return decoded


def streamed(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def provider(handler: Recorder, **kwargs: Any) -> AnthropicProvider:
    options: dict[str, Any] = {"base_url": "http://llm.test", "model": "claude-test", "api_key": KEY}
    options.update(kwargs)
    return AnthropicProvider(transport=httpx.MockTransport(handler), **options)


async def collect(p: AnthropicProvider, messages: Sequence[Message] = (), tools: Sequence[ToolSpec] = ()) -> list[Any]:
    return [e async for e in p.stream(list(messages) or [Message("user", "hi")], tools)]


async def failure(p: AnthropicProvider) -> str:
    with pytest.raises(ProviderError) as info:
        await collect(p)
    message = str(info.value)
    assert KEY not in message and "Traceback" not in message
    return message


async def test_streams_thinking_text_and_several_tool_calls_with_usage() -> None:
    events = await collect(provider(Recorder(streamed(TOOL_STREAM))))
    assert events == [
        ThoughtDelta("The user wants "),
        ThoughtDelta("files."),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCall("toolu_a", "bash", {"command": "ls -l"}),
        ToolCall("toolu_b", "read_file", {"path": "a.txt"}),
        Usage(input_tokens=25, output_tokens=42, cache_read_tokens=100, cache_write_tokens=7),
    ]


async def test_request_shape() -> None:
    handler = Recorder(streamed(sse(start(), block(0, type="text", text="ok"), *stop(1))))
    history = [
        Message("system", "sys one"),
        Message("user", "run ls"),
        Message("assistant", "Sure.", tool_calls=(ToolCall("tc_1", "bash", {"command": "ls"}),)),
        Message("tool", "a.txt", tool_call_id="tc_1", name="bash"),
        Message("system", "sys two"),
    ]
    events = await collect(provider(handler, max_tokens=100, temperature=0.3), history, [BASH])
    assert events[0] == TextDelta("ok")
    request = handler.requests[0]
    assert str(request.url) == "http://llm.test/v1/messages"
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert handler.body == {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": True,
        "temperature": 0.3,
        "system": "sys one\n\nsys two",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "run ls"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Sure."},
                    {"type": "tool_use", "id": "tc_1", "name": "bash", "input": {"command": "ls"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tc_1", "content": "a.txt"}]},
        ],
        "tools": [{"name": "bash", "description": "Run a command.", "input_schema": BASH.parameters}],
    }


async def test_defaults_max_tokens_and_caps_temperature() -> None:
    handler = Recorder(streamed(sse(start(), *stop(1))))
    await collect(provider(handler, temperature=1.7))
    assert handler.body["max_tokens"] == DEFAULT_MAX_TOKENS and handler.body["temperature"] == 1.0
    assert "tools" not in handler.body and "system" not in handler.body


def test_consecutive_results_and_text_merge_into_one_user_message() -> None:
    calls = (ToolCall("a", "bash", {}), ToolCall("b", "bash", {}))
    system, messages = to_anthropic_messages(
        [
            Message("user", "go"),
            Message("assistant", "", tool_calls=calls),
            Message("tool", "ra", tool_call_id="a"),
            Message("tool", "rb", tool_call_id="b"),
            Message("user", "and?"),
            Message("assistant", ""),  # an empty reply is dropped: the API refuses empty text blocks
        ]
    )
    assert system == ""
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "ra"},
        {"type": "tool_result", "tool_use_id": "b", "content": "rb"},
        {"type": "text", "text": "and?"},
    ]


async def test_a_message_that_comes_whole() -> None:
    # Some gateways (LiteLLM's mock) answer a stream request with one JSON message.
    body = {
        "type": "message",
        "content": [
            {"type": "text", "text": "Hi there."},
            {"type": "tool_use", "id": "toolu_x", "name": "bash", "input": {"command": "pwd"}},
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    events = await collect(provider(Recorder(httpx.Response(200, json=body))))
    assert events == [TextDelta("Hi there."), ToolCall("toolu_x", "bash", {"command": "pwd"}), Usage(3, 4)]


async def test_error_event_inside_the_stream_and_an_incomplete_stream() -> None:
    body = sse(start(), block(0, type="text", text=""), delta(0, type="text_delta", text="a"))
    body += b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    assert "reported an error while streaming: Overloaded" in await failure(provider(Recorder(streamed(body))))
    cut = sse(start(), block(0, type="text", text=""), delta(0, type="text_delta", text="a"))
    assert "ended before it was complete" in await failure(provider(Recorder(streamed(cut))))


async def test_http_failures_name_the_alias_and_what_to_change() -> None:
    unauthorized = httpx.Response(
        401, json={"type": "error", "error": {"type": "authentication_error", "message": "x"}}
    )
    message = await failure(provider(Recorder(unauthorized), alias="claude"))
    assert message == (
        'The provider "claude" at http://llm.test refused the API key (HTTP 401: x). '
        "Check `api_key` in [providers.claude]."
    )
    missing = httpx.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": "model: x"}})
    assert "does not know the model 'claude-test'" in await failure(provider(Recorder(missing), alias="claude"))


@pytest.mark.parametrize(
    ("base", "messages", "models"),
    [
        ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages", "https://api.anthropic.com/v1/models"),
        ("http://gw:4000/v1/", "http://gw:4000/v1/messages", "http://gw:4000/v1/models"),
        ("http://gw/anthropic/v1/messages", "http://gw/anthropic/v1/messages", "http://gw/anthropic/v1/models"),
    ],
)
def test_urls(base: str, messages: str, models: str) -> None:
    assert str(messages_url(base)) == messages
    assert str(models_url(base)) == f"{models}?limit=1000"


async def test_build_provider_with_every_setting() -> None:
    handler = Recorder(streamed(sse(start(), *stop(1))))
    config = ProviderConfig(
        kind="anthropic",
        base_url="http://llm.test",
        api_key=Secret(KEY),
        model="claude-test",
        max_tokens=50,
        temperature=0.5,
        headers={"anthropic-beta": "x-test"},
    )
    built = build_provider(config, alias="claude", transport=httpx.MockTransport(handler))
    assert isinstance(built, AnthropicProvider) and KEY not in repr(built)
    assert [e async for e in built.stream([Message("user", "hi")], [])] == [Usage(10, 1)]
    assert handler.requests[0].headers["anthropic-beta"] == "x-test"
    assert handler.body["max_tokens"] == 50 and handler.body["temperature"] == 0.5


@pytest.mark.req("R-MODEL-2")
async def test_an_overloaded_error_event_is_retried_before_the_first_token_only() -> None:
    overloaded = (
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    early = streamed(sse(start()) + overloaded)
    handler = Recorder(
        early, streamed(sse(start(), block(0, type="text", text=""), delta(0, type="text_delta", text="ok"), *stop(1)))
    )
    assert (await collect(provider(handler)))[0] == TextDelta("ok")
    assert len(handler.requests) == 2
    late = streamed(sse(start(), block(0, type="text", text=""), delta(0, type="text_delta", text="a")) + overloaded)
    handler = Recorder(late, streamed(sse(start(), *stop(1))))
    assert "reported an error while streaming: Overloaded" in await failure(provider(handler))
    assert len(handler.requests) == 1
