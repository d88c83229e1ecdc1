"""`kind = "openai"`: any OpenAI-compatible `/v1/chat/completions` endpoint, streamed over SSE (R-AGENT-2).

Works with OpenAI, Ollama, llama.cpp and vLLM: they share the chunk shape `choices[0].delta` with `content`,
optional `reasoning_content` (vLLM, llama.cpp, DeepSeek) or `reasoning` (Ollama, OpenRouter), and `tool_calls`
fragments keyed by `index`. Every failure becomes a `ProviderError` whose message is a sentence meant for the
client: no traceback, no API key, no credentials from the URL.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from app.agents.base import Message, ProviderError, ProviderEvent, TextDelta, ThoughtDelta, ToolCall, ToolSpec

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider", "chat_completions_url", "to_openai_message", "to_openai_tool"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_ERROR_BODY_LIMIT = 65_536  # bytes of an error body worth reading for its message
_ERROR_TEXT_LIMIT = 300  # characters of the server's error message we repeat


def chat_completions_url(base_url: str) -> httpx.URL:
    """`…/v1` (the usual form) gets `/chat/completions`; a bare host gets `/v1/chat/completions`; a full
    `…/chat/completions` is used as it is."""
    url = httpx.URL(base_url)
    path = url.path.rstrip("/")
    if path.endswith("/chat/completions"):
        return url
    if not path:
        path = "/v1"
    return url.copy_with(path=f"{path}/chat/completions")


def _display(url: httpx.URL) -> str:
    # Where we talked to, for error sentences: scheme, host and port only (no userinfo, no query).
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{host}{port}"


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def to_openai_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": orjson.dumps(call.arguments).decode()},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        # `name` on tool messages is not in the OpenAI schema and strict servers refuse unknown fields.
        out["tool_call_id"] = message.tool_call_id or ""
    return out


@dataclass
class _PartialCall:
    """One tool call being assembled from `delta.tool_calls` fragments that share an `index`."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    parsed: dict[str, Any] | None = None  # servers that send arguments as an object rather than a string

    def add(self, fragment: dict[str, Any]) -> None:
        if isinstance(fragment.get("id"), str) and fragment["id"] and not self.id:
            self.id = fragment["id"]
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        if isinstance(name, str) and name and name != self.name:
            # The name: sent once, or repeated whole in every fragment, or (rarely) split.
            self.name = name if name.startswith(self.name) else self.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            self.arguments.append(arguments)
        elif isinstance(arguments, dict):
            self.parsed = arguments

    def finish(self) -> ToolCall:
        # Bad JSON does not fail the turn: the tool is handed `{"_raw": …}`, answers that its arguments are
        # invalid, and the model can try again (see docs/agents.md).
        raw = "".join(self.arguments)
        arguments: dict[str, Any]
        if self.parsed is not None and not raw.strip():
            arguments = self.parsed
        elif not raw.strip():
            arguments = {}
        else:
            try:
                decoded = orjson.loads(raw)
            except orjson.JSONDecodeError:
                decoded = None
            arguments = decoded if isinstance(decoded, dict) else {"_raw": raw}
        return ToolCall(id=self.id or f"call_{uuid.uuid4().hex[:24]}", name=self.name, arguments=arguments)


class OpenAIProvider:
    """Streams one chat completion per step. A fresh `httpx.AsyncClient` per step: nothing to close, and a
    config change (new base_url or key) takes effect on the next step."""

    kind = "openai"

    def __init__(
        self,
        *,
        base_url: str | None,
        model: str | None,
        api_key: str | None = None,
        timeout_secs: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base_url = base_url or DEFAULT_BASE_URL
        self._model = model
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(timeout_secs)
        self._timeout_secs = timeout_secs
        self._transport = transport  # tests plug httpx.MockTransport here

    def __repr__(self) -> str:  # never the key
        return f"OpenAIProvider(base_url={self._base_url!r}, model={self._model!r})"

    def _clean(self, text: str) -> str:
        """Trim a server's message for repeating it to the client, with our key masked if it echoes it."""
        text = " ".join(text.split())[:_ERROR_TEXT_LIMIT]
        return text.replace(self._api_key, "***") if self._api_key else text

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        if not self._model:
            raise ProviderError(
                "The openai provider has no model: set `model` on the agent or on the provider in the config."
            )
        try:
            url = chat_completions_url(self._base_url)
        except httpx.InvalidURL:
            raise ProviderError("The openai provider's base_url is not a valid URL.") from None
        if url.scheme not in ("http", "https"):
            raise ProviderError("The openai provider's base_url must start with http:// or https://.")
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [to_openai_message(m) for m in messages],
            "stream": True,
        }
        if tools:
            body["tools"] = [to_openai_tool(t) for t in tools]
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        where = _display(url)
        calls: dict[int, _PartialCall] = {}
        try:
            async with (
                httpx.AsyncClient(transport=self._transport, timeout=self._timeout) as client,
                client.stream("POST", url, content=orjson.dumps(body), headers=headers) as response,
            ):
                if response.status_code // 100 != 2:
                    raise await self._http_error(response, where)
                complete = False
                async for payload in _sse_data(response):
                    if payload.strip() == "[DONE]":
                        complete = True
                        break
                    events, finished = self._parse_chunk(payload, calls)
                    complete = complete or finished
                    for event in events:
                        yield event
                if not complete:
                    raise ProviderError(f"The reply from the provider at {where} ended before it was complete.")
        except httpx.TimeoutException:
            raise ProviderError(f"The provider at {where} did not answer within {self._timeout_secs:g} s.") from None
        except httpx.ConnectError:
            raise ProviderError(f"Could not connect to the provider at {where}.") from None
        except (httpx.RemoteProtocolError, httpx.ReadError):
            raise ProviderError(
                f"The connection to the provider at {where} broke while the reply was streaming."
            ) from None
        except httpx.HTTPError as exc:
            log.info("openai provider request to %s failed: %s", where, type(exc).__name__)
            raise ProviderError(f"The request to the provider at {where} failed ({type(exc).__name__}).") from None
        for index in sorted(calls):
            yield calls[index].finish()

    async def _http_error(self, response: httpx.Response, where: str) -> ProviderError:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= _ERROR_BODY_LIMIT:
                break
        detail = _error_message(bytes(body[:_ERROR_BODY_LIMIT]))
        status = f"HTTP {response.status_code}"
        log.info("openai provider at %s answered %s", where, status)
        if detail:
            return ProviderError(f"The provider at {where} answered {status}: {self._clean(detail)}")
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        return ProviderError(f"The provider at {where} answered {status}{reason}.")

    def _parse_chunk(self, payload: str, calls: dict[int, _PartialCall]) -> tuple[list[ProviderEvent], bool]:
        """Events of one SSE `data:` payload, and whether it carried a `finish_reason`."""
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise ProviderError("The provider sent a stream chunk that is not JSON.") from None
        if not isinstance(chunk, dict):
            raise ProviderError("The provider sent a stream chunk that is not a JSON object.")
        if chunk.get("error"):  # some servers report a failure inside the stream
            detail = _error_message(payload.encode()) or "no details"
            raise ProviderError(f"The provider reported an error while streaming: {self._clean(detail)}")
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return [], False  # usage-only or keep-alive chunks
        choice = choices[0]
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        events: list[ProviderEvent] = []
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str) and delta[key]:
                events.append(ThoughtDelta(delta[key]))
                break
        if isinstance(delta.get("content"), str) and delta["content"]:
            events.append(TextDelta(delta["content"]))
        fragments = delta.get("tool_calls")
        if isinstance(fragments, list):
            for position, fragment in enumerate(fragments):
                if isinstance(fragment, dict):
                    index = fragment.get("index")
                    slot = index if isinstance(index, int) else position  # older Ollama sends no index
                    calls.setdefault(slot, _PartialCall()).add(fragment)
        return events, bool(choice.get("finish_reason"))


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event: `data:` lines joined by newlines, dispatched on a blank line."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):  # comment / keep-alive
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def _error_message(body: bytes) -> str | None:
    """`error.message` (OpenAI, vLLM, llama.cpp), `error` as a string (Ollama), or `message`/`detail`."""
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
