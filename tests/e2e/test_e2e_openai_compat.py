"""The OpenAI-compatible endpoint of a real `zeroclaw daemon --gateway-port 0`, driven by the official `openai`
Python SDK and `openai` npm package (R-ECO-1, R-ECO-4): models, a completion streamed and not, usage,
continuation with the session header, and errors raised as the SDKs' own exception types."""

from __future__ import annotations

import asyncio
import os
import time

import httpx
import openai
import pytest
from e2e_harness import DaemonFactory
from js_tools import run_node
from session_client import Peer
from test_e2e_gateway_sessions import start, tokens

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")


def sdk(url: str, token: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=token, max_retries=0, timeout=30)


@pytest.mark.req("R-ECO-1")
@pytest.mark.req("R-ECO-4")
async def test_openai_sdk_models_and_completions(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    t = await tokens(d, "alice")
    client = sdk(url, t["alice"])

    models = [m.id async for m in client.models.list()]
    assert "zeroclaw/default" in models

    raw = await client.chat.completions.with_raw_response.create(
        model="zeroclaw/default", messages=[{"role": "user", "content": "hello sdk"}]
    )
    completion = raw.parse()
    sid = raw.headers["x-zeroclaw-session"]
    assert completion.choices[0].message.content == "You said: «hello sdk»"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens >= 0

    # streamed, continuing the same session: the chunks concatenate to the answer, usage in the last chunk
    stream = await client.chat.completions.create(
        model="zeroclaw/default",
        messages=[{"role": "user", "content": "/stream 20"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"X-Zeroclaw-Session": sid},
    )
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and chunks[-1].usage is not None and not chunks[-1].choices
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"

    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http:
        messages = (
            await http.get(f"/api/sessions/{sid}/messages", headers={"Authorization": f"Bearer {t['alice']}"})
        ).json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[3]["content"] == text

    # a new conversation is seeded with the request's earlier messages
    seeded = await client.chat.completions.create(
        model="zeroclaw/default",
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "one"},
            {"role": "user", "content": "second"},
        ],
    )
    assert "first" in (seeded.choices[0].message.content or "")
    assert "second" in (seeded.choices[0].message.content or "")

    with pytest.raises(openai.NotFoundError) as missing:
        await client.chat.completions.create(model="zeroclaw/nope", messages=[{"role": "user", "content": "x"}])
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.AuthenticationError):
        await sdk(url, "zc_not_a_token").chat.completions.create(
            model="zeroclaw/default", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(openai.AuthenticationError):
        await sdk(url, "zc_not_a_token").models.list()


@pytest.mark.req("R-ECO-1")
@pytest.mark.req("R-ECO-4")
async def test_openai_npm_package(daemon_factory: DaemonFactory) -> None:
    """The same through the official `openai` npm package (tests/js/openai_client.mjs): what a JavaScript
    integrator runs."""
    d, url = start(daemon_factory)
    t = await tokens(d, "alice")
    seen = await asyncio.to_thread(run_node, "openai_client.mjs", {"url": url, "token": t["alice"]})

    assert "zeroclaw/default" in seen["models"]
    assert seen["answer"] == "You said: «hello npm»" and seen["finish"] == "stop"
    assert seen["usage"]["total_tokens"] == seen["usage"]["prompt_tokens"] + seen["usage"]["completion_tokens"]
    streamed = seen["streamed"]
    text = "".join(c["text"] or "" for c in streamed)
    assert text and streamed[-1]["usage"] is not None  # include_usage: the last chunk, with no choices
    assert [c["finish"] for c in streamed if c["finish"]] == ["stop"]

    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http:
        messages = (
            await http.get(
                f"/api/sessions/{seen['sessionId']}/messages", headers={"Authorization": f"Bearer {t['alice']}"}
            )
        ).json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]  # continued by the header
    assert messages[3]["content"] == text

    assert seen["unknownModel"] == {
        "class": "NotFoundError",
        "status": 404,
        "code": "model_not_found",
        "type": "invalid_request_error",
    }
    assert seen["badToken"]["class"] == "AuthenticationError" and seen["badToken"]["status"] == 401


@pytest.mark.req("R-ECO-1")
@pytest.mark.req("R-MULTI-3")
async def test_a_tool_call_that_needs_a_human_is_refused_at_once_unless_an_attached_client_answers(
    daemon_factory: DaemonFactory,
) -> None:
    """The tools run in the daemon under the agent's rules: `bash` needs an approval. The caller of `/v1` can answer
    nothing, so alone it is refused at once (not after `approval_timeout_secs = 60`); with a client of the same user
    attached to the session, that client is asked, and its answer runs the tool."""
    d, url = start(daemon_factory)
    t = await tokens(d, "alice")
    client = sdk(url, t["alice"])
    started = time.monotonic()
    raw = await client.chat.completions.with_raw_response.create(
        model="zeroclaw/default", messages=[{"role": "user", "content": "/bash echo alone"}]
    )
    assert time.monotonic() - started < 10
    sid = raw.headers["x-zeroclaw-session"]
    assert "rejected" in str(raw.parse().choices[0].message.content)

    async with await Peer.open(d, token=t["alice"]) as laptop:
        await laptop.call("session/attach", {"sessionId": sid})
        completion = asyncio.ensure_future(
            client.chat.completions.create(
                model="zeroclaw/default",
                messages=[{"role": "user", "content": "/bash echo approved elsewhere"}],
                extra_headers={"X-Zeroclaw-Session": sid},
            )
        )
        asked = await laptop.wait_update("approval_request", session_id=sid)
        approve = {"sessionId": sid, "requestId": asked["requestId"], "decision": "allow_once"}
        assert (await laptop.call("session/approve", approve))["acknowledged"] is True
        answer = (await asyncio.wait_for(completion, 30)).choices[0].message.content
    assert "approved elsewhere" in str(answer) and "rejected" not in str(answer), answer
