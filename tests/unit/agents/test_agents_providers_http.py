"""What the remote providers share (app/agents/providers/http.py, R-MODEL-1/2): retries of 429, 5xx and connection
errors before the first streamed token only, `Retry-After`, the key from `api_key_env`, and the failure sentences;
and `list_models` with its cache (R-MODEL-3). Driven through the openai kind on httpx.MockTransport."""

from __future__ import annotations

import email.utils
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.agents.base import Message, ProviderError, TextDelta, Usage
from app.agents.providers.http import MAX_BACKOFF_SECS, HttpProvider, retry_delay, tls_context
from app.agents.providers.models import clear_cache, list_models
from app.agents.providers.openai import OpenAIProvider, models_url
from app.config.schema import Provider as ProviderConfig
from app.config.secret import Secret

pytestmark = pytest.mark.req("R-MODEL-2")

KEY = "sk-test-http-0123456789"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpProvider, "backoff_secs", 0.001)
    clear_cache()


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + orjson.dumps(payload) + b"\n\n"


OK = chunk({"content": "ok"}, "stop") + b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}\n\n'
OK += b"data: [DONE]\n\n"


class Broken(httpx.AsyncByteStream):
    """A body that sends `before` and then breaks the connection."""

    def __init__(self, before: bytes) -> None:
        self.before = before

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.before:
            yield self.before
        raise httpx.ReadError("connection reset by peer")


class Server:
    """A MockTransport handler answering from a script, one entry per request (the last one repeats)."""

    def __init__(self, *script: httpx.Response | Exception) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok() -> httpx.Response:
    return httpx.Response(200, content=OK, headers={"content-type": "text/event-stream"})


def provider(server: Server, **kwargs: Any) -> OpenAIProvider:
    options: dict[str, Any] = {"base_url": "http://llm.test/v1", "model": "m", "api_key": KEY, "alias": "work"}
    options.update(kwargs)
    return OpenAIProvider(transport=httpx.MockTransport(server), **options)


async def collect(p: OpenAIProvider) -> list[Any]:
    return [e async for e in p.stream([Message("user", "hi")], [])]


async def failure(p: OpenAIProvider) -> str:
    with pytest.raises(ProviderError) as info:
        await collect(p)
    assert KEY not in str(info.value)
    return str(info.value)


# -- retries ---------------------------------------------------------------------------------------


@pytest.mark.req("R-MODEL-1")
async def test_429_then_5xx_then_success() -> None:
    server = Server(
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}}),
        httpx.Response(503, text="busy"),
        ok(),
    )
    assert await collect(provider(server)) == [TextDelta("ok"), Usage(input_tokens=5, output_tokens=1)]
    assert len(server.requests) == 3


async def test_rate_limited_after_the_retries() -> None:
    server = Server(httpx.Response(429, json={"error": {"message": "quota"}}))
    assert await failure(provider(server)) == (
        'The provider "work" at http://llm.test is rate limiting requests (HTTP 429 after 2 retries: quota). '
        "Wait a moment and try again, or check the account's quota."
    )
    assert len(server.requests) == 3  # max_retries defaults to 2


async def test_max_retries_zero_and_errors_not_retried() -> None:
    server = Server(httpx.Response(500, json={"error": {"message": "boom"}}))
    assert (
        await failure(provider(server, max_retries=0))
        == 'The provider "work" at http://llm.test answered HTTP 500: boom'
    )
    assert len(server.requests) == 1
    bad_request = Server(httpx.Response(400, json={"error": {"message": "context too long"}}))
    assert "HTTP 400: context too long" in await failure(provider(bad_request))
    assert len(bad_request.requests) == 1  # a 4xx other than 408/409/429 is the request's fault: no retry


@pytest.mark.req("R-MODEL-1")
async def test_connection_errors_are_retried() -> None:
    server = Server(httpx.ConnectError("refused"), httpx.ConnectTimeout("slow"), ok())
    assert (await collect(provider(server)))[0] == TextDelta("ok")
    dead = Server(httpx.ConnectError("refused"))
    assert (
        await failure(provider(dead, max_retries=1)) == 'Could not connect to the provider "work" at http://llm.test.'
    )
    assert len(dead.requests) == 2


@pytest.mark.req("R-MODEL-1")
async def test_a_break_before_the_first_token_is_retried() -> None:
    early = httpx.Response(
        200, stream=Broken(chunk({"role": "assistant"})), headers={"content-type": "text/event-stream"}
    )
    server = Server(early, ok())
    assert (await collect(provider(server)))[0] == TextDelta("ok")
    assert len(server.requests) == 2


async def test_no_retry_once_a_token_was_streamed() -> None:
    late = httpx.Response(
        200, stream=Broken(chunk({"content": "Partial "})), headers={"content-type": "text/event-stream"}
    )
    server = Server(late, ok())
    received: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for event in provider(server).stream([Message("user", "hi")], []):
            received.append(event)
    assert received == [TextDelta("Partial ")]  # kept by the turn, exactly once: nothing is streamed again
    assert (
        str(info.value)
        == 'The connection to the provider "work" at http://llm.test broke while the reply was streaming.'
    )
    assert len(server.requests) == 1


async def test_a_read_timeout_is_not_retried() -> None:
    server = Server(httpx.ReadTimeout("stalled"))
    assert await failure(provider(server, timeout_secs=2.5)) == (
        'The provider "work" at http://llm.test sent nothing for 2.5 s (`timeout_secs` in [providers.work]).'
    )
    assert len(server.requests) == 1


def test_retry_delay() -> None:
    assert retry_delay(0, httpx.Headers({"retry-after": "3"}), 0.5) == 3.0
    assert retry_delay(0, httpx.Headers({"retry-after-ms": "250"}), 0.5) == 0.25
    when = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= retry_delay(0, httpx.Headers({"retry-after": when}), 0.5) <= 10
    # too long, negative or garbage: the computed backoff
    for value in ("3600", "-1", "soon"):
        assert 0.375 <= retry_delay(0, httpx.Headers({"retry-after": value}), 0.5) <= 0.5
    assert 0.75 <= retry_delay(1, None, 0.5) <= 1.0
    assert MAX_BACKOFF_SECS * 0.75 <= retry_delay(10, None, 0.5) <= MAX_BACKOFF_SECS


# -- keys ------------------------------------------------------------------------------------------


async def test_the_key_from_api_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZC_TEST_KEY", "sk-from-env")
    server = Server(ok())
    await collect(provider(server, api_key=None, api_key_env="ZC_TEST_KEY"))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"
    await collect(provider(server, api_key_env="ZC_TEST_KEY"))  # `api_key` wins
    assert server.requests[1].headers["authorization"] == f"Bearer {KEY}"
    monkeypatch.delenv("ZC_TEST_KEY")
    assert await failure(provider(server, api_key=None, api_key_env="ZC_TEST_KEY")) == (
        'The provider "work" reads its API key from the environment variable ZC_TEST_KEY (`api_key_env`), '
        "which is not set in the daemon's environment."
    )
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "options", "expected"),
    [
        (
            401,
            {"api_key": None, "api_key_env": "ZC_TEST_KEY"},
            "refused the API key (HTTP 401: bad key). Check the "
            "environment variable ZC_TEST_KEY (`api_key_env` in [providers.work]).",
        ),
        (403, {}, "did not allow the API key (HTTP 403: bad key). Check `api_key` in [providers.work]."),
        (
            401,
            {"api_key": None},
            "refused the API key (HTTP 401: bad key). Check no key is set: set `api_key` or "
            "`api_key_env` in [providers.work].",
        ),
    ],
)
async def test_a_refused_key_says_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, status: int, options: dict[str, Any], expected: str
) -> None:
    monkeypatch.setenv("ZC_TEST_KEY", "sk-from-env")
    server = Server(httpx.Response(status, json={"error": {"message": "bad key"}}))
    assert await failure(provider(server, **options)) == f'The provider "work" at http://llm.test {expected}'
    assert len(server.requests) == 1


async def test_extra_headers_and_sampling_settings() -> None:
    server = Server(ok())
    await collect(provider(server, headers={"HTTP-Referer": "https://example.org"}, max_tokens=64, temperature=0.2))
    request = server.requests[0]
    assert request.headers["http-referer"] == "https://example.org"
    body = orjson.loads(request.content)
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.req("R-MODEL-5")
async def test_usage_with_cached_tokens() -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}}
    body = chunk({"content": "x"}, "stop") + b"data: " + orjson.dumps({"choices": [], "usage": usage}) + b"\n\n"
    server = Server(httpx.Response(200, content=body + b"data: [DONE]\n\n"))
    events = await collect(provider(server))
    assert events[-1] == Usage(input_tokens=20, output_tokens=9, cache_read_tokens=100)


# -- list_models -----------------------------------------------------------------------------------


def models_config(**options: Any) -> ProviderConfig:
    values: dict[str, Any] = {"kind": "openai", "base_url": "http://llm.test/v1", "api_key": Secret(KEY), "model": "b"}
    values.update(options)
    return ProviderConfig(**values)


@pytest.mark.req("R-MODEL-3")
async def test_list_models_is_cached_for_the_ttl() -> None:
    listed = {"data": [{"id": "a", "object": "model"}, {"id": "b", "context_length": 8192}]}
    server = Server(httpx.Response(200, json=listed))
    transport = httpx.MockTransport(server)
    first = await list_models("work", models_config(), transport=transport, now=1000.0)
    assert [(m.id, m.provider, m.context_window) for m in first.models] == [("a", "work", None), ("b", "work", 8192)]
    assert first.current == "b" and first.error is None
    assert str(server.requests[0].url) == "http://llm.test/v1/models"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    again = await list_models("work", models_config(), model="zz", transport=transport, now=1299.0)
    assert [m.id for m in again.models] == ["zz", "a", "b"] and again.current == "zz"  # the agent's model, first
    assert len(server.requests) == 1
    await list_models("work", models_config(), transport=transport, now=1301.0)  # past models_ttl_secs (300)
    assert len(server.requests) == 2


@pytest.mark.req("R-MODEL-3")
async def test_list_models_failure_gives_the_configured_model_and_an_error() -> None:
    server = Server(httpx.Response(401, json={"error": {"message": "no"}}), httpx.Response(200, json={"data": []}))
    transport = httpx.MockTransport(server)
    failed = await list_models("work", models_config(), transport=transport)
    assert [m.id for m in failed.models] == ["b"]
    assert failed.error is not None and failed.error.startswith('The provider "work" at http://llm.test refused')
    assert (await list_models("work", models_config(), transport=transport)).error is None  # failures are not cached
    clear_cache()
    unreachable = Server(httpx.ConnectError("refused"))
    down = await list_models("work", models_config(), transport=httpx.MockTransport(unreachable))
    assert down.error == 'Could not list the models of the provider "work" at http://llm.test.'


@pytest.mark.req("R-MODEL-3")
async def test_list_models_of_the_scripted_provider() -> None:
    listing = await list_models("scripted", ProviderConfig(kind="scripted"))
    assert [(m.id, m.provider) for m in listing.models] == [("scripted", "scripted")]
    assert listing.current == "scripted" and listing.error is None
    named = await list_models("warm", ProviderConfig(kind="scripted"), model="warm-1")  # any name: it answers all
    assert [m.id for m in named.models] == ["warm-1", "scripted"] and named.current == "warm-1"


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/models"),
        ("http://localhost:11434", "http://localhost:11434/v1/models"),
        ("http://h/openai/v1/chat/completions", "http://h/openai/v1/models"),
    ],
)
def test_models_url(base: str, url: str) -> None:
    assert str(models_url(base)) == url


# -- first use -------------------------------------------------------------------------------------


@pytest.mark.req("R-MODEL-1")
def test_a_providers_first_use_loads_httpx_without_its_command_line_client() -> None:
    """httpx's `__init__` imports its CLI (click, rich, pygments: ~40 ms, ~5.5 MiB) when installed; building a
    provider keeps it out. A fresh interpreter, so nothing else imported them first."""
    code = (
        "import sys\n"
        "from app.agents.providers import build_provider\n"
        "from app.config.schema import Provider\n"
        "assert 'httpx' not in sys.modules\n"
        "build_provider(Provider(kind='openai')); build_provider(Provider(kind='anthropic'))\n"
        "import httpx\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'click', 'pygments', 'rich', 'httpx', 'httpx_sse'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["['httpx',", "'httpx_sse']"]


@pytest.mark.req("R-MODEL-5")
async def test_a_server_that_refuses_stream_options_is_asked_again_without() -> None:
    refused = httpx.Response(400, json={"error": {"message": "Unrecognized request argument supplied: stream_options"}})
    server = Server(refused, ok())
    assert (await collect(provider(server)))[0] == TextDelta("ok")
    assert [("stream_options" in orjson.loads(r.content)) for r in server.requests] == [True, False]


@pytest.mark.req("R-MODEL-1")
async def test_each_step_s_client_reuses_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression: a new httpx.AsyncClient per step read the CA bundle again, ~20 ms of CPU per provider step.
    tls_context()
    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    provider = OpenAIProvider(base_url="https://llm.test/v1", model="m")
    for _ in range(3):
        async with provider._client():
            pass
    assert loads == []
