"""The openai provider over a real socket (R-AGENT-2): a fake OpenAI-compatible server (Starlette on uvicorn,
127.0.0.1, a free port) that the test starts. The request's `model` picks the server's behaviour."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from waiting import until

from app.agents.base import Message, ProviderError, ProviderEvent, TextDelta, ThoughtDelta, ToolCall, ToolSpec
from app.agents.providers.http import HttpProvider
from app.agents.providers.openai import OpenAIProvider

pytestmark = pytest.mark.req("R-AGENT-2")


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpProvider, "backoff_secs", 0.001)


KEY = "sk-live-secret-value"


def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


TOOL_CHUNKS = [
    event({"role": "assistant", "content": None}),
    event({"reasoning_content": "The user wants "}),
    event({"reasoning_content": "a listing."}),
    event({"content": "Let me "}),
    event({"content": "look."}),
    event(
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}
            ]
        }
    ),
    event({"tool_calls": [{"index": 0, "function": {"arguments": '{"com'}}]}),
    event({"tool_calls": [{"index": 0, "function": {"arguments": 'mand": "ls'}}]}),
    event({"tool_calls": [{"index": 0, "function": {"arguments": ' -la"}'}}]}),
    event({}, "tool_calls"),
    b"data: [DONE]\n\n",
]


@dataclass
class FakeServer:
    url: str = ""
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)


async def chat_completions(request: Request) -> Response:
    body = await request.json()
    request.app.state.fake.requests.append((dict(request.headers), body))
    model = body["model"]

    async def chunks(parts: list[bytes], then_break: bool = False) -> AsyncIterator[bytes]:
        for part in parts:
            yield part
            await asyncio.sleep(0.005)  # separate TCP writes, so the client really reads them piecemeal
        if then_break:
            raise RuntimeError("the fake server dies mid-stream")

    if model == "tools":
        return StreamingResponse(chunks(TOOL_CHUNKS), media_type="text/event-stream")
    if model == "error":
        return JSONResponse({"error": {"message": "The server had an error.", "type": "server_error"}}, 500)
    if model == "break":
        return StreamingResponse(chunks(TOOL_CHUNKS[:5], then_break=True), media_type="text/event-stream")
    if model == "slow":
        await asyncio.sleep(1)  # past the client's timeout; uvicorn waits for it at shutdown, so keep it short
    return JSONResponse({"error": {"message": f"unknown model {model}"}}, 404)


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    fake = FakeServer()
    app = Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])
    app.state.fake = fake
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    await until(lambda: uv.started or task.done())
    assert uv.started, "the fake server did not start"
    fake.url = f"http://127.0.0.1:{port}/v1"
    yield fake
    uv.should_exit = True
    await task
    sock.close()


async def run(base: str, model: str, timeout_secs: float = 10.0) -> list[ProviderEvent]:
    provider = OpenAIProvider(base_url=base, model=model, api_key=KEY, timeout_secs=timeout_secs)
    tools = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
    return [e async for e in provider.stream([Message("user", "list files")], tools)]


async def test_streamed_text_thoughts_and_a_split_tool_call(server: FakeServer) -> None:
    events = await run(server.url, "tools")
    assert "".join(e.text for e in events if isinstance(e, ThoughtDelta)) == "The user wants a listing."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look."
    assert events[-1] == ToolCall("call_1", "bash", {"command": "ls -la"})
    headers, body = server.requests[0]
    assert headers["authorization"] == f"Bearer {KEY}"
    assert body["stream"] is True and body["tools"][0]["function"]["name"] == "bash"


async def test_http_500_with_a_json_error_body(server: FakeServer) -> None:
    with pytest.raises(ProviderError) as info:
        await run(server.url, "error")
    where = server.url.removesuffix("/v1")
    assert str(info.value) == f"The openai provider at {where} answered HTTP 500: The server had an error."


async def test_stream_that_breaks_midway(server: FakeServer) -> None:
    received: list[ProviderEvent] = []
    provider = OpenAIProvider(base_url=server.url, model="break", api_key=KEY)
    with pytest.raises(ProviderError) as info:
        async for e in provider.stream([Message("user", "hi")], []):
            received.append(e)
    assert received  # the first chunks arrived before the break
    assert "broke while the reply was streaming" in str(info.value)
    assert KEY not in str(info.value)


async def test_read_timeout(server: FakeServer) -> None:
    with pytest.raises(ProviderError) as info:
        await run(server.url, "slow", timeout_secs=0.3)
    assert "sent nothing for 0.3 s (`timeout_secs`" in str(info.value)


async def test_connection_refused() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(ProviderError) as info:
        await run(f"http://127.0.0.1:{port}/v1", "tools")
    assert str(info.value) == f"Could not connect to the openai provider at http://127.0.0.1:{port}."
