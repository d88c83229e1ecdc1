"""`kind = "openai"`: any OpenAI-compatible `/v1/chat/completions` endpoint, streamed over SSE (R-MODEL-1).

Works with OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter and LiteLLM: they share the chunk shape
`choices[0].delta` with `content`, optional `reasoning_content` (vLLM, llama.cpp, DeepSeek) or `reasoning`
(Ollama, OpenRouter), and `tool_calls` fragments keyed by `index`. The request asks for
`stream_options.include_usage`, so the last chunk carries the step's `usage` (R-MODEL-5). Retries and failure
sentences are `app.agents.providers.http`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from httpx_sse import ServerSentEvent

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
from app.agents.providers.http import (
    RETRYABLE_ERROR_TYPES,
    HttpProvider,
    RetryableStreamError,
    StepReader,
    error_message,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIProvider",
    "chat_completions_url",
    "models_url",
    "to_openai_message",
    "to_openai_tool",
    "usage_of",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


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


def models_url(base_url: str) -> httpx.URL:
    """The `GET /models` beside `chat_completions_url(base_url)`."""
    url = chat_completions_url(base_url)
    return url.copy_with(path=url.path.removesuffix("/chat/completions") + "/models", query=None)


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


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def usage_of(usage: dict[str, Any]) -> Usage:
    """OpenAI's `usage` as a `Usage`: `prompt_tokens` counts the cached ones too (`prompt_tokens_details.
    cached_tokens`), so they are taken out of the input; a gateway's Anthropic-style cache fields are read too."""
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or _count(usage.get("cache_read_input_tokens"))
    written = _count(usage.get("cache_creation_input_tokens"))
    prompt = _count(usage.get("prompt_tokens"))
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=_count(usage.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


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


class _Reader:
    """One attempt's chat-completion chunks: text and thoughts as they come, tool calls and usage at the end."""

    __slots__ = ("calls", "done", "finished", "provider", "started", "usage")

    def __init__(self, provider: OpenAIProvider) -> None:
        self.provider = provider
        self.calls: dict[int, _PartialCall] = {}
        self.done = False  # `[DONE]` seen
        self.finished = False  # a `finish_reason` seen: complete even if `[DONE]` never comes
        self.started = False
        self.usage: Usage | None = None

    @property
    def complete(self) -> bool:
        return self.done or self.finished

    def event(self, sse: ServerSentEvent) -> list[ProviderEvent]:
        payload = sse.data
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:  # `[DONE]` (not JSON) is looked for here, off the per-chunk path
            stripped = payload.strip()
            if stripped == "[DONE]":
                self.done = True
                return []
            if not stripped:
                return []
            raise ProviderError(f"{self.provider.name} sent a stream chunk that is not JSON.") from None
        if not isinstance(chunk, dict):
            raise ProviderError(f"{self.provider.name} sent a stream chunk that is not a JSON object.")
        return self.chunk(chunk, streamed=True)

    def chunk(self, chunk: dict[str, Any], *, streamed: bool) -> list[ProviderEvent]:
        error = chunk.get("error")
        if error:  # some servers report a failure inside the stream
            detail = error_message(orjson.dumps(chunk)) or "no details"
            sentence = f"{self.provider.name} reported an error while streaming: {self.provider._clean(detail, None)}"
            if isinstance(error, dict) and error.get("type") in RETRYABLE_ERROR_TYPES:
                raise RetryableStreamError(sentence)
            raise ProviderError(sentence)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage_of(usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []  # usage-only or keep-alive chunks
        choice = choices[0]
        delta = choice.get("delta" if streamed else "message")
        delta = delta if isinstance(delta, dict) else {}
        events: list[ProviderEvent] = []
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str) and delta[key]:
                events.append(ThoughtDelta(delta[key]))
                break
        content = delta.get("content")
        if isinstance(content, str) and content:
            events.append(TextDelta(content))
        fragments = delta.get("tool_calls")
        if isinstance(fragments, list):
            for position, fragment in enumerate(fragments):
                if isinstance(fragment, dict):
                    index = fragment.get("index")
                    slot = index if isinstance(index, int) else position  # older Ollama sends no index
                    self.calls.setdefault(slot, _PartialCall()).add(fragment)
            self.started = True  # a tool call has begun: no retry after this
        if choice.get("finish_reason"):
            self.finished = True
        if events:
            self.started = True
        return events

    def whole(self, body: Any) -> list[ProviderEvent]:
        if not isinstance(body, dict):
            raise ProviderError(f"{self.provider.name} answered with JSON that is not an object.")
        events = self.chunk(body, streamed=False)
        self.done = True
        return events

    def finish(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = [self.calls[index].finish() for index in sorted(self.calls)]
        if self.usage is not None:
            events.append(self.usage)
        return events


class OpenAIProvider(HttpProvider):
    """Streams one chat completion per step."""

    kind = "openai"
    default_base_url = DEFAULT_BASE_URL

    def _new_reader(self) -> StepReader:
        return _Reader(self)

    def _models_url(self) -> httpx.URL:
        return models_url(self.base_url)

    def _models_headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [to_openai_tool(t) for t in tools]
        if self._max_tokens is not None:
            body["max_tokens"] = self._max_tokens
        if self._temperature is not None:
            body["temperature"] = self._temperature
        return body

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        if not self.model:
            raise ProviderError(f"{self.name} has no model: set `model` on the agent or on the provider in the config.")
        url = self._check_url(chat_completions_url)
        key = self.api_key()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = self.request_body(messages, tools)
        yielded = False
        try:
            async for event in self._post(url, body, headers, key):
                yielded = True
                yield event
        except ProviderError as exc:
            # A server too old for `stream_options` refuses the request naming it: ask again without (no usage).
            if yielded or "stream_options" not in str(exc):
                raise
            del body["stream_options"]
            async for event in self._post(url, body, headers, key):
                yield event
