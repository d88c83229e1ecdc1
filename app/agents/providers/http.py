"""What every remote provider shares (R-MODEL-1/2): one streamed POST per step over httpx, read with `httpx-sse`,
retried with backoff before the first streamed token, and every failure turned into a `ProviderError` sentence
that names the provider alias and says what to change.

A kind (`openai`, `anthropic`) supplies the request (`_request`) and a `StepReader` per attempt that turns the
server's events into `ProviderEvent`s. Retries (`max_retries`, default 2) cover HTTP 429, 5xx and connection
errors, wait like the vendors' SDKs (0.5 s doubling to at most 8 s, less up to a quarter of jitter; a `Retry-After`
or `retry-after-ms` of at most 60 s is honoured instead), and happen only while nothing has been streamed: a token
already shown cannot be taken back, so a failure after it ends the turn with that text kept (app/sessions/turn.py).
A timeout waiting for a chunk is not retried: it already waited `timeout_secs`.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import ssl
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Protocol

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent, SSEError

from app.agents.base import Message, ProviderError, ProviderEvent, ToolSpec
from app.telemetry import trace_headers

__all__ = [
    "ERROR_TEXT_LIMIT",
    "MAX_BACKOFF_SECS",
    "MAX_RETRY_AFTER_SECS",
    "RETRYABLE_ERROR_TYPES",
    "HttpProvider",
    "ModelInfo",
    "RetryableStreamError",
    "StepReader",
    "display",
    "error_message",
    "retry_delay",
]

log = logging.getLogger(__name__)

ERROR_BODY_LIMIT = 65_536  # bytes of an error body worth reading for its message
ERROR_TEXT_LIMIT = 300  # characters of the server's error message we repeat
MAX_BACKOFF_SECS = 8.0
MAX_RETRY_AFTER_SECS = 60.0  # a longer Retry-After is not waited for: the computed backoff is used instead


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model a provider serves (R-MODEL-3)."""

    id: str
    provider: str  # the provider alias
    display_name: str | None = None
    context_window: int | None = None


class StepReader(Protocol):
    """Turns one attempt's answer into events; a new reader per attempt, so a retry starts clean."""

    done: bool  # the stream said it is over ([DONE], message_stop): stop reading
    started: bool  # output reached the turn (text, a thought, the start of a tool call): no retry from here on

    @property
    def complete(self) -> bool:
        """Whether the answer read so far is whole (a stream that ends without it was cut)."""
        ...

    def event(self, sse: ServerSentEvent) -> list[ProviderEvent]:
        """The events of one server-sent event; raises `ProviderError` for an error the server streamed."""
        ...

    def whole(self, body: Any) -> list[ProviderEvent]:
        """The events of an answer that came as one JSON document (a server that does not stream)."""
        ...

    def finish(self) -> list[ProviderEvent]:
        """What the step ends with: the assembled tool calls and the step's `Usage`."""
        ...


def display(url: httpx.URL) -> str:
    """Where we talked to, for error sentences: scheme, host and port only (no userinfo, no query)."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{host}{port}"


def error_message(body: bytes) -> str | None:
    """`error.message` (OpenAI, Anthropic, vLLM, llama.cpp), `error` as a string (Ollama), or `message`/`detail`."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict):
        return None
    error = decoded.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    for value in (error, decoded.get("message"), decoded.get("detail")):
        if isinstance(value, str) and value:
            return value
    return None


def retry_delay(attempt: int, headers: Mapping[str, str] | None, base: float) -> float:
    """Seconds to wait before retry `attempt + 1`: the server's `retry-after-ms` / `Retry-After` (seconds or an
    HTTP date) when it is 0 to 60 s, else `base` doubled per attempt, capped at 8 s, less up to 25 % jitter."""
    if headers is not None:
        asked: float | None = None
        try:
            if "retry-after-ms" in headers:
                asked = float(headers["retry-after-ms"]) / 1000
            elif "retry-after" in headers:
                value = headers["retry-after"]
                try:
                    asked = float(value)
                except ValueError:
                    when = email.utils.parsedate_to_datetime(value)
                    asked = when.timestamp() - time.time()
        except (ValueError, TypeError, OverflowError):
            asked = None
        if asked is not None and 0 <= asked <= MAX_RETRY_AFTER_SECS:
            return asked
    jitter = 1 - 0.25 * random.random()  # noqa: S311 - spreading retries, not a secret
    return float(min(base * 2**attempt, MAX_BACKOFF_SECS) * jitter)


def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


class RetryableStreamError(ProviderError):
    """A failure the server reported inside a stream (Anthropic's `overloaded_error`, an OpenAI-style
    `server_error`) that is retried like an HTTP 529 or 500 would be, if nothing was streamed before it."""


RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error", "server_error"})


@cache
def tls_context() -> ssl.SSLContext:
    """The CA bundle, read once per process: a new `httpx.AsyncClient` reads it again by default, ~20 ms of CPU that
    every provider step paid (0.15 ms with this one)."""
    return httpx.create_ssl_context()


class HttpProvider:
    """The HTTP side of a remote provider. A fresh `httpx.AsyncClient` per step (over one TLS context): nothing to
    close, and a config change (new base_url or key) takes effect on the next step (a provider is built per turn)."""

    kind: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    backoff_secs: ClassVar[float] = 0.5  # the first retry's wait; tests lower it

    def __init__(
        self,
        *,
        base_url: str | None,
        model: str | None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        alias: str | None = None,
        timeout_secs: float = 60.0,
        max_retries: int = 2,
        max_tokens: int | None = None,
        temperature: float | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url or self.default_base_url
        self.model = model
        self.alias = alias
        self._api_key = api_key or None
        self._api_key_env = api_key_env or None
        self._timeout = httpx.Timeout(timeout_secs)
        self._timeout_secs = timeout_secs
        self._max_retries = max_retries
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._headers = dict(headers or {})
        self._transport = transport  # tests plug httpx.MockTransport here

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=self._transport, timeout=self._timeout, verify=tls_context())

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(alias={self.alias!r}, base_url={self.base_url!r}, model={self.model!r})"

    # -- sentences -----------------------------------------------------------------------------------

    @property
    def noun(self) -> str:
        """How sentences name this provider: by its alias when known, else by its kind."""
        return f'the provider "{self.alias}"' if self.alias else f"the {self.kind} provider"

    @property
    def name(self) -> str:
        """`noun` at the start of a sentence."""
        return self.noun[0].upper() + self.noun[1:]

    @property
    def _section(self) -> str:
        return f"[providers.{self.alias}]" if self.alias else "the provider's config"

    def _clean(self, text: str, key: str | None) -> str:
        """Trim a server's message for repeating it to the client, with our key masked if it echoes it."""
        text = " ".join(text.split())[:ERROR_TEXT_LIMIT]
        return text.replace(key, "***") if key else text

    def _key_source(self) -> str:
        if self._api_key:
            return f"`api_key` in {self._section}"
        if self._api_key_env:
            return f"the environment variable {self._api_key_env} (`api_key_env` in {self._section})"
        return f"no key is set: set `api_key` or `api_key_env` in {self._section}"

    def api_key(self) -> str | None:
        """The key for this step: `api_key`, else the variable `api_key_env` names (read now, so a changed
        environment is seen by the next turn). A named variable that is unset is an error, not "no key"."""
        if self._api_key:
            return self._api_key
        if self._api_key_env:
            value = os.environ.get(self._api_key_env, "").strip()
            if not value:
                raise ProviderError(
                    f"{self.name} reads its API key from the environment variable {self._api_key_env} "
                    f"(`api_key_env`), which is not set in the daemon's environment."
                )
            return value
        return None

    def _status_error(self, status: int, reason: str, detail: str | None, where: str, retries: int) -> ProviderError:
        said = f": {detail}" if detail else ""
        if status in (401, 403):
            verb = "refused" if status == 401 else "did not allow"
            return ProviderError(
                f"{self.name} at {where} {verb} the API key (HTTP {status}{said}). Check {self._key_source()}."
            )
        if status == 404:
            return ProviderError(
                f"{self.name} at {where} does not know the model {self.model!r} or the URL (HTTP 404{said}). "
                f"Check `model` and `base_url` in {self._section}."
            )
        if status == 429:
            tries = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
            return ProviderError(
                f"{self.name} at {where} is rate limiting requests (HTTP 429{tries}{said}). "
                "Wait a moment and try again, or check the account's quota."
            )
        if detail:
            return ProviderError(f"{self.name} at {where} answered HTTP {status}: {detail}")
        phrase = f" {reason}" if reason else ""
        return ProviderError(f"{self.name} at {where} answered HTTP {status}{phrase}.")

    # -- one step ------------------------------------------------------------------------------------

    def _check_url(self, url_of: Any) -> httpx.URL:
        try:
            url: httpx.URL = url_of(self.base_url)
        except httpx.InvalidURL:
            raise ProviderError(f"{self.name}'s base_url is not a valid URL.") from None
        if url.scheme not in ("http", "https"):
            raise ProviderError(f"{self.name}'s base_url must start with http:// or https://.")
        return url

    def _new_reader(self) -> StepReader:
        raise NotImplementedError

    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        """One model step (`app.agents.base.Provider`); each kind's own."""
        raise NotImplementedError

    async def _post(
        self, url: httpx.URL, body: dict[str, Any], headers: dict[str, str], key: str | None
    ) -> AsyncIterator[ProviderEvent]:
        """POST `body` and stream the answer's events, retrying as the module says; then the reader's `finish`."""
        headers.update(self._headers)
        headers.update(trace_headers())  # R-MODEL-6: the step's `chat` span as W3C `traceparent` (none when off)
        content = orjson.dumps(body)
        where = display(url)
        attempt = 0
        while True:
            reader = self._new_reader()
            wait: float | None = None
            try:
                async with (
                    self._client() as client,
                    client.stream("POST", url, content=content, headers=headers) as response,
                ):
                    status = response.status_code
                    if status // 100 != 2:
                        detail = await self._error_detail(response, key)
                        log.info("%s provider at %s answered HTTP %s", self.kind, where, status)
                        if _retryable(status) and attempt < self._max_retries:
                            wait = retry_delay(attempt, response.headers, self.backoff_secs)
                        else:
                            raise self._status_error(status, response.reason_phrase, detail, where, attempt)
                    elif _is_json(response):
                        raw = await response.aread()
                        try:
                            decoded = orjson.loads(raw)
                        except orjson.JSONDecodeError:
                            raise ProviderError(
                                f"{self.name} at {where} answered with JSON that is not valid."
                            ) from None
                        for event in reader.whole(decoded):
                            yield event
                    else:
                        if (
                            "content-type" not in response.headers
                        ):  # a bare server: read it as the stream it was asked for
                            response.headers["content-type"] = "text/event-stream"
                        async with aclosing(EventSource(response).aiter_sse()) as events:
                            async for sse in events:
                                for event in reader.event(sse):
                                    yield event
                                if reader.done:
                                    break
                        if not reader.complete:
                            raise ProviderError(f"The reply from {self.noun} at {where} ended before it was complete.")
            except RetryableStreamError as exc:
                if reader.started or attempt >= self._max_retries:
                    raise ProviderError(str(exc)) from None
                wait = retry_delay(attempt, None, self.backoff_secs)
            except SSEError:
                raise ProviderError(f"{self.name} at {where} did not answer with an event stream.") from None
            except (httpx.ReadTimeout, httpx.WriteTimeout):
                raise ProviderError(
                    f"{self.name} at {where} sent nothing for {self._timeout_secs:g} s "
                    f"(`timeout_secs` in {self._section})."
                ) from None
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                if attempt >= self._max_retries:
                    log.info("%s provider at %s: %s", self.kind, where, type(exc).__name__)
                    raise ProviderError(f"Could not connect to {self.noun} at {where}.") from None
                wait = retry_delay(attempt, None, self.backoff_secs)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if reader.started or attempt >= self._max_retries:
                    log.info("%s provider at %s: %s", self.kind, where, type(exc).__name__)
                    raise ProviderError(
                        f"The connection to {self.noun} at {where} broke while the reply was streaming."
                    ) from None
                wait = retry_delay(attempt, None, self.backoff_secs)
            except httpx.HTTPError as exc:
                log.info("%s provider request to %s failed: %s", self.kind, where, type(exc).__name__)
                raise ProviderError(f"The request to {self.noun} at {where} failed ({type(exc).__name__}).") from None
            if wait is None:
                break
            attempt += 1
            log.info("%s provider at %s: retry %d in %.2f s", self.kind, where, attempt, wait)
            await asyncio.sleep(wait)
        for event in reader.finish():
            yield event

    async def _error_detail(self, response: httpx.Response, key: str | None) -> str | None:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= ERROR_BODY_LIMIT:
                break
        detail = error_message(bytes(body[:ERROR_BODY_LIMIT]))
        return self._clean(detail, key) if detail else None

    # -- listing models ------------------------------------------------------------------------------

    def _models_url(self) -> httpx.URL:
        raise NotImplementedError

    def _models_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    async def fetch_models(self) -> list[ModelInfo]:
        """`GET …/v1/models` (R-MODEL-3), one page of up to 1000; raises `ProviderError` with a sentence."""
        key = self.api_key()
        url = self._check_url(lambda _base: self._models_url())
        where = display(url)
        headers = self._models_headers(key)
        headers.update(self._headers)
        try:
            async with self._client() as client:
                response = await client.get(url, headers=headers)
        except httpx.TimeoutException:
            raise ProviderError(
                f"{self.name} at {where} did not list its models within {self._timeout_secs:g} s."
            ) from None
        except httpx.HTTPError:
            raise ProviderError(f"Could not list the models of {self.noun} at {where}.") from None
        if response.status_code // 100 != 2:
            detail = error_message(response.content[:ERROR_BODY_LIMIT])
            raise self._status_error(
                response.status_code, response.reason_phrase, self._clean(detail, key) if detail else None, where, 0
            )
        try:
            decoded = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise ProviderError(f"{self.name} at {where} listed its models in something that is not JSON.") from None
        data = decoded.get("data") if isinstance(decoded, dict) else None
        if not isinstance(data, list):
            data = decoded.get("models") if isinstance(decoded, dict) else None  # Ollama's /api/tags shape
        models: list[ModelInfo] = []
        for entry in data if isinstance(data, list) else []:
            if not isinstance(entry, dict):
                continue
            model_id = entry.get("id") or entry.get("name")
            if not isinstance(model_id, str) or not model_id:
                continue
            shown = entry.get("display_name") or entry.get("name")
            window = next(
                (
                    entry[k]
                    for k in (
                        "context_window",
                        "context_length",
                        "max_input_tokens",
                        "max_model_len",
                        "max_context_length",
                    )
                    if isinstance(entry.get(k), int)
                ),
                None,
            )
            models.append(
                ModelInfo(
                    id=model_id,
                    provider=self.alias or self.kind,
                    display_name=shown if isinstance(shown, str) and shown != model_id else None,
                    context_window=window,
                )
            )
        return models


def _is_json(response: httpx.Response) -> bool:
    content_type = response.headers.get("content-type", "")
    return "json" in content_type and "event-stream" not in content_type
