"""The openai provider against httpx.MockTransport (R-AGENT-2): request shape, SSE parsing, tool-call assembly,
and every failure as a ProviderError with a clear sentence. The real-socket tests are in
test_agents_openai_server.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx
import orjson
import pytest

from app.agents.base import (
    Message,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from app.agents.providers import build_provider
from app.agents.providers.http import HttpProvider
from app.agents.providers.openai import OpenAIProvider, chat_completions_url, to_openai_message
from app.agents.scripted import ScriptedProvider
from app.config.schema import Provider as ProviderConfig
from app.config.secret import Secret

pytestmark = pytest.mark.req("R-AGENT-2")


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpProvider, "backoff_secs", 0.001)


KEY = "sk-test-0123456789abcdef"
BASH = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse(*payloads: dict[str, Any] | str) -> bytes:
    out = b""
    for payload in payloads:
        data = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
        out += f"data: {data}\n\n".encode()
    return out


TOOL_STREAM = sse(
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "Let me check."}),
    chunk({"content": "Running "}),
    chunk({"content": "it."}),
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"comm'}}]}),
    chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "read_file", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'and": "ls -l"}'}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"path": "a.txt"}'}}]}),
    chunk({}, finish="tool_calls"),
    "[DONE]",
)


class Recorder:
    """A MockTransport handler that records the request and answers with a fixed response."""

    def __init__(self, response: httpx.Response | Callable[[httpx.Request], httpx.Response]) -> None:
        self.response = response
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.response(request) if callable(self.response) else self.response

    @property
    def body(self) -> dict[str, Any]:
        decoded: dict[str, Any] = orjson.loads(self.requests[-1].content)
        return decoded


def provider(handler: Recorder, **kwargs: Any) -> OpenAIProvider:
    options: dict[str, Any] = {"base_url": "http://llm.test/v1", "model": "m", "api_key": KEY}
    options.update(kwargs)
    return OpenAIProvider(transport=httpx.MockTransport(handler), **options)


async def collect(
    p: OpenAIProvider, messages: Sequence[Message] = (), tools: Sequence[ToolSpec] = ()
) -> list[ProviderEvent]:
    return [e async for e in p.stream(list(messages) or [Message("user", "hi")], tools)]


async def failure(p: OpenAIProvider) -> str:
    with pytest.raises(ProviderError) as info:
        await collect(p)
    message = str(info.value)
    assert KEY not in message and "Traceback" not in message
    return message


async def test_streams_text_thoughts_and_assembled_tool_calls() -> None:
    handler = Recorder(httpx.Response(200, content=TOOL_STREAM, headers={"content-type": "text/event-stream"}))
    events = await collect(provider(handler))
    assert events == [
        ThoughtDelta("Let me check."),
        TextDelta("Running "),
        TextDelta("it."),
        ToolCall("call_a", "bash", {"command": "ls -l"}),
        ToolCall("call_b", "read_file", {"path": "a.txt"}),
    ]


async def test_request_shape() -> None:
    handler = Recorder(httpx.Response(200, content=sse(chunk({"content": "ok"}, "stop"), "[DONE]")))
    history = [
        Message("system", "sys"),
        Message("user", "run ls"),
        Message("assistant", "", tool_calls=(ToolCall("tc_1", "bash", {"command": "ls"}),)),
        Message("tool", "a.txt", tool_call_id="tc_1", name="bash"),
    ]
    await collect(provider(handler, timeout_secs=7), history, [BASH])
    request = handler.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://llm.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert handler.body == {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "run ls"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "tc_1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
                ],
            },
            {"role": "tool", "content": "a.txt", "tool_call_id": "tc_1"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "bash", "description": "Run a command.", "parameters": BASH.parameters},
            }
        ],
    }


async def test_no_key_no_authorization_and_no_tools_key() -> None:
    handler = Recorder(httpx.Response(200, content=sse(chunk({"content": "ok"}, "stop"), "[DONE]")))
    await collect(provider(handler, api_key=None))
    assert "authorization" not in handler.requests[0].headers
    assert "tools" not in handler.body


async def test_sse_details_comments_multiline_data_crlf_and_usage_chunks() -> None:
    body = (
        b": keep-alive\r\n\r\n"
        b'event: message\r\ndata: {"choices":[{"index":0,\r\ndata: "delta":{"content":"a"}}]}\r\n\r\n'
        b"data:" + orjson.dumps(chunk({"reasoning": "hmm", "content": "b"}, "stop")) + b"\n\n"
        b'data: {"choices":[],"usage":{"total_tokens":3}}\n\n'
        b"data: [DONE]\n\n"
    )
    events = await collect(provider(Recorder(httpx.Response(200, content=body))))
    assert events == [TextDelta("a"), ThoughtDelta("hmm"), TextDelta("b"), Usage()]


async def test_tool_call_arguments_as_an_object_and_without_index_or_id() -> None:
    # Older Ollama versions send each call whole, with no index, and arguments as an object.
    calls = [{"function": {"name": "poll", "arguments": {"question": "q", "options": ["a", "b"]}}}]
    body = sse(chunk({"tool_calls": calls}, "tool_calls"), "[DONE]")
    [event] = await collect(provider(Recorder(httpx.Response(200, content=body))))
    assert isinstance(event, ToolCall)
    assert (event.name, event.arguments) == ("poll", {"question": "q", "options": ["a", "b"]})
    assert event.id.startswith("call_")


async def test_invalid_tool_arguments_are_handed_over_raw() -> None:
    fragments = [{"index": 0, "id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls'}}]
    body = sse(chunk({"tool_calls": fragments}, "tool_calls"), "[DONE]")
    [event] = await collect(provider(Recorder(httpx.Response(200, content=body))))
    assert event == ToolCall("c1", "bash", {"_raw": '{"command": "ls'})


async def test_http_500_with_a_json_error_body() -> None:
    body = {"error": {"message": f"model overloaded (key {KEY})", "type": "server_error"}}
    message = await failure(provider(Recorder(httpx.Response(500, json=body))))
    assert message == "The openai provider at http://llm.test answered HTTP 500: model overloaded (key ***)"


async def test_http_error_with_ollama_style_and_plain_bodies() -> None:
    assert await failure(provider(Recorder(httpx.Response(404, json={"error": "model 'm' not found"})))) == (
        "The openai provider at http://llm.test does not know the model 'm' or the URL (HTTP 404: model 'm' not "
        "found). Check `model` and `base_url` in the provider's config."
    )
    assert await failure(provider(Recorder(httpx.Response(502, text="<html>bad gateway</html>")))) == (
        "The openai provider at http://llm.test answered HTTP 502 Bad Gateway."
    )


async def test_error_event_inside_the_stream() -> None:
    body = sse(chunk({"content": "a"}), {"error": {"message": "context length exceeded"}})
    assert "context length exceeded" in await failure(provider(Recorder(httpx.Response(200, content=body))))


async def test_stream_without_done_or_finish_reason_is_incomplete() -> None:
    body = sse(chunk({"content": "partial"}))
    assert "ended before it was complete" in await failure(provider(Recorder(httpx.Response(200, content=body))))


async def test_finish_reason_without_done_is_complete() -> None:
    body = sse(chunk({"content": "ok"}, "stop"))
    assert await collect(provider(Recorder(httpx.Response(200, content=body)))) == [TextDelta("ok")]


async def test_chunk_that_is_not_json() -> None:
    body = sse("{not json")
    assert "not JSON" in await failure(provider(Recorder(httpx.Response(200, content=body))))


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx.ConnectError("refused"), "Could not connect to the openai provider at http://llm.test."),
        (httpx.ReadTimeout("slow"), "The openai provider at http://llm.test sent nothing for 3 s (`timeout_secs`"),
        (httpx.RemoteProtocolError("peer closed"), "broke while the reply was streaming"),
    ],
)
async def test_transport_errors(exc: Exception, expected: str) -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise exc

    assert expected in await failure(provider(Recorder(boom), timeout_secs=3))


async def test_missing_model_and_bad_base_url() -> None:
    handler = Recorder(httpx.Response(200))
    assert "no model" in await failure(provider(handler, model=None))
    assert "http:// or https://" in await failure(provider(handler, base_url="ftp://x/v1"))
    assert not handler.requests


async def test_credentials_in_the_base_url_are_not_repeated() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    message = await failure(provider(Recorder(boom), base_url="https://user:hunter2@llm.test:8443/v1?k=v"))
    assert message == "Could not connect to the openai provider at https://llm.test:8443."


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
        ("http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions"),
        ("http://localhost:8080", "http://localhost:8080/v1/chat/completions"),
        ("http://h/openai/v1/chat/completions", "http://h/openai/v1/chat/completions"),
    ],
)
def test_chat_completions_url(base: str, url: str) -> None:
    assert str(chat_completions_url(base)) == url


def test_tool_message_drops_the_name_field() -> None:
    assert to_openai_message(Message("tool", "r", tool_call_id="x", name="bash")) == {
        "role": "tool",
        "content": "r",
        "tool_call_id": "x",
    }


def test_build_provider() -> None:
    assert isinstance(build_provider(ProviderConfig(kind="scripted"), model="ignored"), ScriptedProvider)
    config = ProviderConfig(kind="openai", base_url="http://llm.test/v1", api_key=Secret(KEY), model="base")
    built = build_provider(config, model="agent-model")
    assert isinstance(built, OpenAIProvider)
    assert "agent-model" in repr(built) and KEY not in repr(built)
    assert "base" in repr(build_provider(config, model=None))


async def test_build_provider_passes_the_key_and_timeout() -> None:
    handler = Recorder(httpx.Response(200, content=sse(chunk({"content": "ok"}, "stop"))))
    config = ProviderConfig(kind="openai", base_url="http://llm.test/v1", api_key=Secret(KEY), model="m")
    built = build_provider(config, transport=httpx.MockTransport(handler))
    assert [e async for e in built.stream([Message("user", "hi")], [])] == [TextDelta("ok")]
    assert handler.requests[0].headers["authorization"] == f"Bearer {KEY}"
