"""The `openai` provider kind end to end (R-AGENT-2): a real daemon talks to a local fake
`/v1/chat/completions` server (Starlette under uvicorn, in a thread of the test process) that streams SSE.

The fake answers by the last message it is given:

| last message | reply |
|---|---|
| user `say hello` | a reasoning chunk, then text in four chunks, `finish_reason: stop`, `[DONE]` |
| user `run the tool` | a `bash` tool call split over three fragments, `finish_reason: tool_calls` |
| a `tool` result | text quoting the result |
| user `http error` | HTTP 500 with an OpenAI error body |
| user `break mid-stream` | some text, then the connection is dropped |
| user `error mid-stream` | some text, then an `error` object inside the stream |

The last tests point the daemon at LiteLLM's proxy instead (R-MODEL-7, tests/litellm_proxy.py), through both
provider kinds: a streamed turn and a tool round, a wrong key, and a stream cut mid-turn by a fault-injecting TCP
proxy (the text already streamed is kept in the transcript exactly once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from e2e_harness import Daemon, DaemonFactory
from litellm_proxy import Fault, FaultProxy, LiteLLM
from session_client import Peer, check_turn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from waiting import until_sync

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

API_KEY = "sk-fake-e2e-key-0123456789"
MODEL = "fake-model-1"
TOOL_CALL_ID = "call_fake_1"
TOOL_COMMAND = "echo fake-tool-$((40 + 2))"


def sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


class FakeOpenAI:
    """A tiny OpenAI-compatible server; `requests` records (headers, body) of every call."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        app = Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"])])
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self.thread.start()
        until_sync(lambda: self.server.started or not self.thread.is_alive(), 10)
        assert self.server.started, "the fake OpenAI server did not start"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        with contextlib.suppress(OSError):
            self.sock.close()

    async def completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        last = body["messages"][-1]
        if last["role"] == "tool":
            return self.stream(
                [
                    chunk({"role": "assistant", "content": "The tool said: "}),
                    chunk({"content": last["content"].splitlines()[0]}),
                    chunk({}, "stop"),
                    b"data: [DONE]\n\n",
                ]
            )
        prompt = last.get("content") or ""
        if prompt == "say hello":
            return self.stream(
                [
                    chunk({"role": "assistant", "reasoning_content": "pondering the greeting"}),
                    chunk({"content": "Hello"}),
                    chunk({"content": " from"}),
                    chunk({"content": " the fake"}),
                    chunk({"content": " model."}),
                    b": keep-alive comment\n\n",
                    chunk({}, "stop"),
                    b"data: [DONE]\n\n",
                ]
            )
        if prompt == "run the tool":
            arguments = json.dumps({"command": TOOL_COMMAND})
            return self.stream(
                [
                    chunk(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": TOOL_CALL_ID,
                                    "type": "function",
                                    "function": {"name": "bash", "arguments": ""},
                                }
                            ],
                        }
                    ),
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:10]}}]}),
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[10:]}}]}),
                    chunk({}, "tool_calls"),
                    b"data: [DONE]\n\n",
                ]
            )
        if prompt == "http error":
            return JSONResponse(
                {"error": {"message": "the fake model is overloaded", "type": "server_error"}}, status_code=500
            )
        if prompt == "break mid-stream":
            return self.stream([chunk({"role": "assistant", "content": "Partial "})], explode=True)
        if prompt == "error mid-stream":
            return self.stream(
                [
                    chunk({"role": "assistant", "content": "Partial "}),
                    sse({"error": {"message": "upstream exploded", "type": "server_error"}}),
                ]
            )
        return self.stream(
            [chunk({"role": "assistant", "content": f"echo: {prompt}"}), chunk({}, "stop"), b"data: [DONE]\n\n"]
        )

    @staticmethod
    def stream(parts: list[bytes], *, explode: bool = False) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            for part in parts:
                yield part
                await asyncio.sleep(0.02)
            if explode:
                raise RuntimeError("the fake server drops the connection mid-stream")

        return StreamingResponse(body(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def oa_daemon(fake_openai: FakeOpenAI) -> Iterator[Daemon]:
    config = f"""\
[providers.local]
kind = "openai"
base_url = "{fake_openai.base_url}"
model = "{MODEL}"
api_key = "{API_KEY}"
timeout_secs = 10

[agents.oa]
provider = "local"
auto_approve = ["bash"]

[agents.oa_ask]
provider = "local"
"""
    factory = DaemonFactory()
    try:
        yield factory.start(config, env={"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    finally:
        factory.close()


async def oa_session(peer: Peer, alias: str = "oa") -> str:
    new = await peer.new_session(agentAlias=alias)
    assert new["agentAlias"] == alias
    return new["sessionId"]  # type: ignore[no-any-return]


@pytest.mark.req("R-AGENT-2")
async def test_streamed_text_and_reasoning(oa_daemon: Daemon, fake_openai: FakeOpenAI) -> None:
    async with await Peer.open(oa_daemon) as owner:
        sid = await oa_session(owner)
        before = len(fake_openai.requests)
        turn = await owner.prompt(sid, "say hello")
        result = check_turn(turn, sid)
        assert result["content"] == "Hello from the fake model."
        assert [u["text"] for u in turn.of_type("agent_message_chunk")] == ["Hello", " from", " the fake", " model."]
        assert [u["text"] for u in turn.of_type("agent_thought_chunk")] == ["pondering the greeting"]
        assert len(fake_openai.requests) == before + 1
        headers, body = fake_openai.requests[-1]
        assert headers.get("authorization") == f"Bearer {API_KEY}"
        assert body["model"] == MODEL and body["stream"] is True
        assert body["messages"][-1] == {"role": "user", "content": "say hello"}
        tool_names = {t["function"]["name"] for t in body.get("tools", [])}
        assert "bash" in tool_names, body.get("tools")
        # the second turn sends the first exchange as context (without the hidden reasoning)
        turn = await owner.prompt(sid, "and again")
        check_turn(turn, sid)
        messages = fake_openai.requests[-1][1]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"], messages
        assert messages[1]["content"] == "Hello from the fake model."
        assert "pondering" not in json.dumps(messages)


@pytest.mark.req("R-AGENT-2")
@pytest.mark.req("R-STREAM-2")
async def test_one_tool_call_round(oa_daemon: Daemon, fake_openai: FakeOpenAI) -> None:
    async with await Peer.open(oa_daemon) as owner:
        sid = await oa_session(owner)
        before = len(fake_openai.requests)
        turn = await owner.prompt(sid, "run the tool")
        result = check_turn(turn, sid)
        assert turn.types[:2] == ["tool_call", "tool_result"], turn.types
        call, tool_result = turn.updates[:2]
        assert call["toolCallId"] == TOOL_CALL_ID and call["name"] == "bash"
        assert call["rawInput"] == {"command": TOOL_COMMAND}
        assert tool_result["toolCallId"] == TOOL_CALL_ID and "fake-tool-42" in tool_result["rawOutput"]
        assert result["content"] == "The tool said: fake-tool-42"
        assert len(fake_openai.requests) == before + 2
        second = fake_openai.requests[-1][1]["messages"]
        assistant, tool = second[-2], second[-1]
        assert assistant["role"] == "assistant"
        assert assistant["tool_calls"][0]["id"] == TOOL_CALL_ID
        assert assistant["tool_calls"][0]["type"] == "function"
        assert assistant["tool_calls"][0]["function"]["name"] == "bash"
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"command": TOOL_COMMAND}
        assert tool["role"] == "tool" and tool["tool_call_id"] == TOOL_CALL_ID
        assert "fake-tool-42" in tool["content"]
        assert "name" not in tool  # strict servers refuse unknown fields
        rows = (await owner.call("session/messages", {"sessionId": sid}))["messages"]
        assert [r["role"] for r in rows] == ["user", "tool_call", "tool_result", "assistant"], rows


@pytest.mark.req("R-AGENT-2")
@pytest.mark.req("R-STREAM-3")
async def test_tool_call_from_openai_needs_approval_without_auto_approve(oa_daemon: Daemon) -> None:
    async with await Peer.open(oa_daemon) as owner:
        sid = await oa_session(owner, "oa_ask")
        mark, fut = await owner.start_prompt(sid, "run the tool")
        request = await owner.wait_update("approval_request", session_id=sid, start=mark)
        assert request["toolName"] == "bash" and request["arguments"] == {"command": TOOL_COMMAND}
        await owner.call(
            "session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "allow_once"}
        )
        turn = await owner.finish_turn(sid, mark, fut)
        check_turn(turn, sid)
        assert turn.types[:4] == ["tool_call", "approval_request", "approval_resolved", "tool_result"], turn.types


@pytest.mark.req("R-AGENT-2")
@pytest.mark.req("R-STREAM-2")
@pytest.mark.parametrize(
    ("prompt", "partial", "words"),
    [
        ("http error", "", ("HTTP 500", "the fake model is overloaded", "127.0.0.1:")),
        ("break mid-stream", "Partial ", ("broke while the reply was streaming", "127.0.0.1:")),
        ("error mid-stream", "Partial ", ("error while streaming", "upstream exploded")),
    ],
    ids=["http_500", "connection_dropped", "error_in_stream"],
)
async def test_provider_errors_fail_the_turn_with_a_clear_message(
    oa_daemon: Daemon, fake_openai: FakeOpenAI, prompt: str, partial: str, words: tuple[str, ...]
) -> None:
    async with await Peer.open(oa_daemon) as owner:
        sid = await oa_session(owner)
        turn = await owner.prompt(sid, prompt)
        result = check_turn(turn, sid, stop="failed")
        content = result["content"]
        assert content.startswith(partial), content
        for word in words:
            assert word in content, content
        if "127.0.0.1:" in words:
            assert f"http://127.0.0.1:{fake_openai.port}" in content, content
        assert API_KEY not in content and "Traceback" not in content
        # the session survives a failed turn
        check_turn(await owner.prompt(sid, "say hello"), sid)
    assert API_KEY not in oa_daemon.stderr


@pytest.mark.req("R-AGENT-2")
@pytest.mark.req("R-CFG-4")
async def test_unreachable_provider_fails_the_turn(oa_daemon: Daemon) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    async with await Peer.open(oa_daemon) as owner:
        await owner.call(
            "config/set-many",
            {
                "sets": [
                    {"prop": "providers.dead.kind", "value": "openai"},
                    {"prop": "providers.dead.base_url", "value": f"http://127.0.0.1:{dead_port}/v1"},
                    {"prop": "providers.dead.model", "value": "m"},
                    {"prop": "agents.dead.provider", "value": "dead"},
                ]
            },
        )
        try:
            sid = await oa_session(owner, "dead")
            result = check_turn(await owner.prompt(sid, "anyone?"), sid, stop="failed")
            assert f'Could not connect to the provider "dead" at http://127.0.0.1:{dead_port}' in result["content"], (
                result
            )
            await owner.call("session/close", {"sessionId": sid})
        finally:
            await owner.call("config/delete", {"prop": "agents.dead"})
            await owner.call("config/delete", {"prop": "providers.dead"})


@pytest.mark.req("R-CFG-4")
@pytest.mark.req("R-AGENT-1")
async def test_model_changes_apply_only_after_a_successful_commit(oa_daemon: Daemon, fake_openai: FakeOpenAI) -> None:
    async with await Peer.open(oa_daemon) as owner:
        sid = await oa_session(owner)
        # a batch that fails validation changes nothing the next step uses
        code, data = await owner.error(
            "config/set-many",
            {
                "sets": [
                    {"prop": "providers.local.model", "value": "staged-but-rejected"},
                    {"prop": "limits.max_sessions", "value": "not an int"},
                ]
            },
        )
        assert code == -32602 and data["index"] == 1, data
        check_turn(await owner.prompt(sid, "say hello"), sid)
        assert fake_openai.requests[-1][1]["model"] == MODEL
        # a committed change applies to the next step of a live session; the agent's model wins
        await owner.call("config/set", {"prop": "agents.oa.model", "value": "agent-model"})
        try:
            check_turn(await owner.prompt(sid, "say hello"), sid)
            assert fake_openai.requests[-1][1]["model"] == "agent-model"
        finally:
            await owner.call("config/delete", {"prop": "agents.oa.model"})
        check_turn(await owner.prompt(sid, "say hello"), sid)
        assert fake_openai.requests[-1][1]["model"] == MODEL


# -- the daemon against a server this project did not write (R-MODEL-7) -----------------------------------------
# LiteLLM's proxy (tests/litellm_proxy.py) serves both kinds; `cut` is a fault-injecting TCP proxy in front of it.


@pytest.fixture(scope="module")
def cut_proxy(litellm: LiteLLM) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream_port=litellm.port)
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture(scope="module")
def lite_daemon(litellm: LiteLLM, cut_proxy: FaultProxy) -> Iterator[Daemon]:
    config = ""
    for kind, base in (("openai", f"{litellm.base_url}/v1"), ("anthropic", litellm.base_url)):
        cut_base = base.replace(litellm.base_url, cut_proxy.base_url)
        config += f"""\
[providers.lite-{kind}]
kind = "{kind}"
base_url = "{base}"
model = "mock-model"
api_key_env = "ZEROCLAW_TEST_LITELLM_KEY"
timeout_secs = 10

[providers.lite-{kind}.pricing]
input_per_mtok = 2.0
output_per_mtok = 10.0

[providers.badkey-{kind}]
kind = "{kind}"
base_url = "{base}"
model = "mock-model"
api_key = "sk-not-the-key"

[providers.cut-{kind}]
kind = "{kind}"
base_url = "{cut_base}"
model = "mock-model"
api_key_env = "ZEROCLAW_TEST_LITELLM_KEY"

[agents.lite-{kind}]
provider = "lite-{kind}"
auto_approve = ["bash"]

[agents.badkey-{kind}]
provider = "badkey-{kind}"

[agents.cut-{kind}]
provider = "cut-{kind}"

"""
    env = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    factory = DaemonFactory()
    try:
        yield factory.start(config, env={**env, "ZEROCLAW_TEST_LITELLM_KEY": litellm.key})
    finally:
        factory.close()


@pytest.mark.req("R-MODEL-7")
@pytest.mark.req("R-MODEL-1")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_litellm_streamed_text_then_a_tool_round(lite_daemon: Daemon, kind: str) -> None:
    async with await Peer.open(lite_daemon) as owner:
        sid = await oa_session(owner, f"lite-{kind}")
        turn = await owner.prompt(sid, "good morning")
        assert check_turn(turn, sid)["content"] == "Hello from LiteLLM: «good morning»"
        assert len(turn.of_type("agent_message_chunk")) == 5
        turn = await owner.prompt(sid, "tool: echo lite-$((40 + 2))")
        result = check_turn(turn, sid)
        [call] = turn.of_type("tool_call")
        [output] = turn.of_type("tool_result")
        assert call["toolCallId"] == "call_mock_1" and call["rawInput"] == {"command": "echo lite-$((40 + 2))"}
        assert "lite-42" in output["rawOutput"]
        assert result["content"].startswith("Running it.Tool said: «lite-42")
        rows = (await owner.call("session/messages", {"sessionId": sid}))["messages"]
        roles = [r["role"] for r in rows]
        assert roles == ["user", "assistant", "user", "assistant", "tool_call", "tool_result", "assistant"], rows


@pytest.mark.req("R-MODEL-7")
@pytest.mark.req("R-MODEL-5")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_litellm_usage_reaches_turn_complete_and_session_usage(lite_daemon: Daemon, kind: str) -> None:
    """The token counts a third-party server reports (LiteLLM's `usage`, asked for with `stream_options.include_usage`
    on the openai kind, `message_start` / `message_delta` on the anthropic kind) are the turn's, priced."""
    async with await Peer.open(lite_daemon) as owner:
        sid = await oa_session(owner, f"lite-{kind}")
        turn = await owner.prompt(sid, "good morning")
        check_turn(turn, sid)
        [step] = turn.of_type("usage")
        total = turn.updates[-1]["usage"]
        assert step["outputTokens"] == 5 and step["inputTokens"] >= 2, step  # the mock counts words
        assert {key: step[key] for key in total} == total
        expected = (step["inputTokens"] * 2.0 + step["outputTokens"] * 10.0) / 1_000_000
        assert total["costUsd"] == pytest.approx(expected)
        answer = await owner.call("session/usage", {"sessionId": sid})
        [counted] = answer["turns"]
        assert (counted["provider"], counted["model"], counted["steps"]) == (f"lite-{kind}", "mock-model", 1)
        assert answer["total"] == total


@pytest.mark.req("R-MODEL-7")
@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_litellm_wrong_key_fails_the_turn_naming_the_key(lite_daemon: Daemon, kind: str) -> None:
    async with await Peer.open(lite_daemon) as owner:
        sid = await oa_session(owner, f"badkey-{kind}")
        result = check_turn(await owner.prompt(sid, "hi"), sid, stop="failed")
        assert "refused the API key (HTTP 401" in result["content"] and "`api_key`" in result["content"], result
        assert "sk-not-the-key" not in result["content"]
    assert "sk-not-the-key" not in lite_daemon.stderr


@pytest.mark.req("R-MODEL-7")
@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_litellm_stream_cut_mid_turn_keeps_the_text_once(
    lite_daemon: Daemon, cut_proxy: FaultProxy, kind: str
) -> None:
    cut_proxy.faults.append(Fault(cut_after=2500))
    async with await Peer.open(lite_daemon) as owner:
        sid = await oa_session(owner, f"cut-{kind}")
        turn = await owner.prompt(sid, "long: 200")
        result = check_turn(turn, sid, stop="failed")
        streamed, _, reason = result["content"].partition("\n")
        assert streamed.startswith("word0 word1 ") and "word199" not in streamed, result
        assert "broke while the reply was streaming" in reason, result
        rows = (await owner.call("session/messages", {"sessionId": sid}))["messages"]
        said = [r["content"] for r in rows if r["role"] == "assistant"]
        assert "".join(said).count("word0 ") == 1, said  # the streamed text is in the transcript exactly once
        assert said[0] == streamed, said
        # the next turn works, and its context has the partial reply once
        check_turn(await owner.prompt(sid, "and now?"), sid)
