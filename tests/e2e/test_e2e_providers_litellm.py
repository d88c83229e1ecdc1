"""Both provider kinds against a server this project did not write (R-MODEL-7): LiteLLM's proxy, started by the
test from its own virtualenv (tests/litellm_proxy.py), serving `/v1/chat/completions` (kind `openai`) and
`/v1/messages` (kind `anthropic`). The providers are driven directly here; tests/e2e/test_e2e_openai.py drives a
daemon against the same proxy.

The `mock-model` replies are tests/litellm/zeroclaw_mock.py's (a LiteLLM custom provider, streamed by LiteLLM),
`mock-text` is LiteLLM's own `mock_response`, `mock-ratelimited` its mock of a 429.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest
from litellm_proxy import Fault, FaultProxy, LiteLLM

from app.agents.base import Message, ProviderError, ProviderEvent, TextDelta, ToolCall, ToolSpec, Usage
from app.agents.providers import build_provider
from app.agents.providers.http import HttpProvider
from app.agents.providers.models import clear_cache, list_models
from app.config.schema import Provider as ProviderConfig
from app.config.secret import Secret

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="LiteLLM's virtualenv layout"),
    pytest.mark.req("R-MODEL-7"),
]

KINDS = ["openai", "anthropic"]
BASH = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpProvider, "backoff_secs", 0.01)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    clear_cache()


def config(kind: str, base_url: str, key: str, **options: Any) -> ProviderConfig:
    # The openai kind is given the proxy's `/v1`, the anthropic kind its bare host, as their users would.
    values: dict[str, Any] = {
        "kind": kind,
        "base_url": f"{base_url}/v1" if kind == "openai" else base_url,
        "api_key": Secret(key),
        "model": "mock-model",
        "timeout_secs": 10.0,
    }
    values.update(options)
    return ProviderConfig(**values)


def provider(kind: str, base_url: str, key: str, **options: Any) -> Any:
    return build_provider(config(kind, base_url, key, **options), alias=f"lite-{kind}")


async def collect(p: Any, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> list[ProviderEvent]:
    return [e async for e in p.stream(list(messages), list(tools))]


def text(events: Sequence[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def usage(events: Sequence[ProviderEvent]) -> Usage:
    found = [e for e in events if isinstance(e, Usage)]
    assert len(found) == 1, events
    return found[0]


@pytest.mark.req("R-MODEL-1")
@pytest.mark.req("R-MODEL-5")
@pytest.mark.parametrize("kind", KINDS)
async def test_streamed_text_and_usage(litellm: LiteLLM, kind: str) -> None:
    p = provider(kind, litellm.base_url, litellm.key)
    events = await collect(p, [Message("system", "Be brief."), Message("user", "good morning")])
    assert text(events) == "Hello from LiteLLM: «good morning»"
    assert len([e for e in events if isinstance(e, TextDelta)]) == 5  # streamed, one word per chunk
    spent = usage(events)
    assert spent.output_tokens == 5 and spent.input_tokens >= 2  # the mock counts words


@pytest.mark.req("R-MODEL-1")
@pytest.mark.parametrize("kind", KINDS)
async def test_litellm_mock_response(litellm: LiteLLM, kind: str) -> None:
    # LiteLLM's own mock: streamed on /v1/chat/completions, one JSON document on /v1/messages.
    p = provider(kind, litellm.base_url, litellm.key, model="mock-text")
    events = await collect(p, [Message("user", "hi")])
    assert text(events) == "Plain mock reply from LiteLLM."
    assert usage(events).output_tokens > 0


@pytest.mark.req("R-MODEL-1")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_call_and_its_result(litellm: LiteLLM, kind: str) -> None:
    p = provider(kind, litellm.base_url, litellm.key)
    history = [Message("user", "tool: echo hi")]
    events = await collect(p, history, [BASH])
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert text(events) == "Running it."
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_mock_1", "bash", {"command": "echo hi"})]
    history += [
        Message("assistant", "Running it.", tool_calls=tuple(calls)),
        Message("tool", "hi", tool_call_id="call_mock_1", name="bash"),
    ]
    events = await collect(p, history, [BASH])
    assert text(events) == "Tool said: «hi»"
    assert not [e for e in events if isinstance(e, ToolCall)]


@pytest.mark.req("R-MODEL-1")
@pytest.mark.parametrize("kind", KINDS)
async def test_several_tool_calls_in_one_step_in_order(litellm: LiteLLM, kind: str) -> None:
    p = provider(kind, litellm.base_url, litellm.key)
    events = await collect(p, [Message("user", "tools: echo a | echo b")], [BASH])
    calls = [(e.id, e.arguments["command"]) for e in events if isinstance(e, ToolCall)]
    assert calls == [("call_mock_1", "echo a"), ("call_mock_2", "echo b")]


@pytest.mark.req("R-MODEL-3")
@pytest.mark.parametrize("kind", KINDS)
async def test_model_listing(litellm: LiteLLM, kind: str) -> None:
    listing = await list_models(f"lite-{kind}", config(kind, litellm.base_url, litellm.key), model="my-own-model")
    ids = [m.id for m in listing.models]
    assert listing.error is None
    assert {"mock-model", "mock-text", "mock-ratelimited"} <= set(ids)
    assert ids[0] == "my-own-model" and listing.current == "my-own-model"  # the configured model is always there
    assert {m.provider for m in listing.models} == {f"lite-{kind}"}
    text_model = next(m for m in listing.models if m.id == "mock-text")
    assert text_model.context_window == 128000  # LiteLLM's `max_input_tokens`
    bad = await list_models(f"lite-{kind}", config(kind, litellm.base_url, "sk-wrong-key"))
    assert [m.id for m in bad.models] == ["mock-model"]
    assert bad.error is not None and "API key" in bad.error and f'"lite-{kind}"' in bad.error


@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_wrong_key_is_401_naming_the_key(litellm: LiteLLM, kind: str) -> None:
    p = provider(kind, litellm.base_url, "sk-wrong-key")
    with pytest.raises(ProviderError) as info:
        await collect(p, [Message("user", "hi")])
    message = str(info.value)
    assert message.startswith(f'The provider "lite-{kind}" at {litellm.base_url} refused the API key (HTTP 401')
    assert f"`api_key` in [providers.lite-{kind}]" in message
    assert "sk-wrong-key" not in message


@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", KINDS)
async def test_the_key_from_api_key_env(litellm: LiteLLM, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEROCLAW_TEST_LITELLM_KEY", litellm.key)
    p = provider(kind, litellm.base_url, "", api_key=None, api_key_env="ZEROCLAW_TEST_LITELLM_KEY")
    assert text(await collect(p, [Message("user", "hi")])) == "Hello from LiteLLM: «hi»"
    monkeypatch.setenv("ZEROCLAW_TEST_LITELLM_KEY", "sk-wrong-key")
    with pytest.raises(ProviderError) as info:
        await collect(p, [Message("user", "hi")])
    assert "the environment variable ZEROCLAW_TEST_LITELLM_KEY (`api_key_env`" in str(info.value)


@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limited_after_the_retries(litellm: LiteLLM, kind: str, fault_proxy: FaultProxy) -> None:
    # LiteLLM's own 429, counted through the fault proxy (which forwards everything here).
    p = provider(kind, fault_proxy.base_url, litellm.key, model="mock-ratelimited", max_retries=1)
    with pytest.raises(ProviderError) as info:
        await collect(p, [Message("user", "hi")])
    assert f'The provider "lite-{kind}"' in str(info.value)
    assert "is rate limiting requests (HTTP 429 after 1 retry" in str(info.value)
    assert fault_proxy.connections == 2


@pytest.mark.req("R-MODEL-1")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_429_then_success_honours_retry_after(litellm: LiteLLM, kind: str, fault_proxy: FaultProxy) -> None:
    fault_proxy.faults.append(Fault(status=429, headers=(("retry-after", "0.2"),), body=b'{"error":"slow down"}'))
    fault_proxy.faults.append(Fault(status=503, body=b"{}"))
    p = provider(kind, fault_proxy.base_url, litellm.key)
    assert text(await collect(p, [Message("user", "again")])) == "Hello from LiteLLM: «again»"
    assert fault_proxy.connections == 3


@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_cut_midway_keeps_what_arrived(litellm: LiteLLM, kind: str, fault_proxy: FaultProxy) -> None:
    fault_proxy.faults.append(Fault(cut_after=2500))
    p = provider(kind, fault_proxy.base_url, litellm.key)
    received: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in p.stream([Message("user", "long: 200")], []):
            received.append(event)
    assert str(info.value) == (
        f'The connection to the provider "lite-{kind}" at {fault_proxy.base_url} broke while the reply was streaming.'
    )
    streamed = text(received)
    assert streamed.startswith("word0 word1 ") and "word199" not in streamed
    assert fault_proxy.connections == 1  # no retry once text was streamed: it cannot be taken back


@pytest.mark.req("R-MODEL-2")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_stall_past_timeout_secs(litellm: LiteLLM, kind: str) -> None:
    # The mock sends "Thinking " and then nothing for 6 s; 2 s leaves a loaded machine time for the first chunk.
    p = provider(kind, litellm.base_url, litellm.key, timeout_secs=2)
    received: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in p.stream([Message("user", "slow: 6")], []):
            received.append(event)
    assert text(received) == "Thinking "
    assert str(info.value) == (
        f'The provider "lite-{kind}" at {litellm.base_url} sent nothing for 2 s '
        f"(`timeout_secs` in [providers.lite-{kind}])."
    )
