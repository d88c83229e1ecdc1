"""`kind = "anthropic"`: the Anthropic Messages API (`POST /v1/messages`) and Anthropic-compatible gateways
(R-MODEL-1), streamed over SSE.

The context a turn keeps is in OpenAI chat shape (`Message`); here it becomes Messages-API shape: system messages
join into the top-level `system`, an assistant's tool calls become `tool_use` blocks, and tool results become
`tool_result` blocks of the user message that follows (consecutive ones in one message, as the API wants). The
stream's `content_block_delta`s are `text_delta` (text), `thinking_delta` (a thought, never kept) and
`input_json_delta` (a tool call's arguments, assembled per block); usage comes from `message_start` (input, cache
read and cache write tokens) and `message_delta` (output tokens, counted up to then). Retries and failure sentences
are `app.agents.providers.http`'s.
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
from app.agents.providers.http import RETRYABLE_ERROR_TYPES, HttpProvider, RetryableStreamError, StepReader

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "AnthropicProvider",
    "messages_url",
    "models_url",
    "to_anthropic_messages",
    "to_anthropic_tool",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192  # the Messages API requires `max_tokens`; `[providers.<p>] max_tokens` sets it


def _api_root(base_url: str) -> httpx.URL:
    """The `…/v1` of `base_url`: a bare host gets `/v1`; `…/v1/messages` or `…/v1/models` lose their last part."""
    url = httpx.URL(base_url)
    path = url.path.rstrip("/")
    for tail in ("/messages", "/models"):
        path = path.removesuffix(tail)
    if not path:
        path = "/v1"
    return url.copy_with(path=path, query=None)


def messages_url(base_url: str) -> httpx.URL:
    """`https://api.anthropic.com` and `…/v1` get `/v1/messages`; a full `…/messages` is used as it is."""
    url = httpx.URL(base_url)
    if url.path.rstrip("/").endswith("/messages"):
        return url
    root = _api_root(base_url)
    return root.copy_with(path=f"{root.path}/messages")


def models_url(base_url: str) -> httpx.URL:
    root = _api_root(base_url)
    return root.copy_with(path=f"{root.path}/models", params={"limit": "1000"})


def to_anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(`system`, `messages`) for the Messages API; consecutive messages of one role are merged into one."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            add("user", [{"type": "text", "text": message.content}] if message.content else [])
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            add("assistant", blocks)
        else:  # a tool result answers the assistant's tool_use in the next user message
            add(
                "user", [{"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}]
            )
    # Tool results first in their user message: the API wants them right after the tool_use they answer.
    for entry in out:
        if entry["role"] == "user":
            entry["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(system), out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


@dataclass
class _Block:
    """A `tool_use` content block being assembled from `input_json_delta`s."""

    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    initial: dict[str, Any] | None = None

    def finish(self) -> ToolCall:
        raw = "".join(self.parts)
        arguments: dict[str, Any]
        if not raw.strip():
            arguments = self.initial or {}
        else:
            try:
                decoded = orjson.loads(raw)
            except orjson.JSONDecodeError:
                decoded = None
            arguments = decoded if isinstance(decoded, dict) else {"_raw": raw}
        return ToolCall(id=self.id or f"toolu_{uuid.uuid4().hex[:24]}", name=self.name, arguments=arguments)


class _Reader:
    """One attempt's Messages-API events."""

    __slots__ = ("blocks", "cache_read", "cache_write", "done", "input", "output", "provider", "saw_usage", "started")

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider
        self.blocks: dict[int, _Block] = {}
        self.done = False
        self.started = False
        self.saw_usage = False
        self.input = self.output = self.cache_read = self.cache_write = 0

    @property
    def complete(self) -> bool:
        return self.done

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.saw_usage = True
        # message_delta's counts are cumulative: the latest non-zero one wins.
        self.input = _count(usage.get("input_tokens")) or self.input
        self.output = _count(usage.get("output_tokens")) or self.output
        self.cache_read = _count(usage.get("cache_read_input_tokens")) or self.cache_read
        self.cache_write = _count(usage.get("cache_creation_input_tokens")) or self.cache_write

    def event(self, sse: ServerSentEvent) -> list[ProviderEvent]:
        if not sse.data.strip():
            return []
        try:
            data = orjson.loads(sse.data)
        except orjson.JSONDecodeError:
            raise ProviderError(f"{self.provider.name} sent a stream event that is not JSON.") from None
        if not isinstance(data, dict):
            raise ProviderError(f"{self.provider.name} sent a stream event that is not a JSON object.")
        kind = data.get("type") or sse.event
        if kind == "content_block_delta":
            delta = data.get("delta")
            if not isinstance(delta, dict):
                return []
            dtype = delta.get("type")
            if dtype == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
                self.started = True
                return [TextDelta(delta["text"])]
            if dtype == "thinking_delta" and isinstance(delta.get("thinking"), str) and delta["thinking"]:
                self.started = True
                return [ThoughtDelta(delta["thinking"])]
            if dtype == "input_json_delta" and isinstance(delta.get("partial_json"), str):
                block = self.blocks.get(data.get("index", -1))
                if block is not None:
                    block.parts.append(delta["partial_json"])
            return []
        if kind == "content_block_start":
            return self._block(data.get("index"), data.get("content_block"))
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict):
                self._usage(message.get("usage"))
        elif kind == "message_delta":
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            error = data.get("error")
            detail = error.get("message") if isinstance(error, dict) else None
            said = self.provider._clean(detail, None) if isinstance(detail, str) else "no details"
            sentence = f"{self.provider.name} reported an error while streaming: {said}"
            if isinstance(error, dict) and error.get("type") in RETRYABLE_ERROR_TYPES:
                raise RetryableStreamError(sentence)
            raise ProviderError(sentence)
        return []  # ping, content_block_stop, signature deltas

    def _block(self, index: Any, block: Any) -> list[ProviderEvent]:
        if not isinstance(block, dict):
            return []
        btype = block.get("type")
        if btype == "tool_use":
            self.started = True
            initial = block.get("input")
            self.blocks[index if isinstance(index, int) else len(self.blocks)] = _Block(
                id=str(block.get("id") or ""),
                name=str(block.get("name") or ""),
                initial=initial if isinstance(initial, dict) and initial else None,
            )
        elif btype == "text" and isinstance(block.get("text"), str) and block["text"]:
            self.started = True
            return [TextDelta(block["text"])]
        elif btype == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
            self.started = True
            return [ThoughtDelta(block["thinking"])]
        return []

    def whole(self, body: Any) -> list[ProviderEvent]:
        """A message that came whole (a gateway that does not stream)."""
        if not isinstance(body, dict):
            raise ProviderError(f"{self.provider.name} answered with JSON that is not an object.")
        if body.get("type") == "error":
            error = body.get("error")
            detail = error.get("message") if isinstance(error, dict) else None
            raise ProviderError(f"{self.provider.name} reported an error: {detail or 'no details'}")
        self._usage(body.get("usage"))
        events: list[ProviderEvent] = []
        content = body.get("content")
        for index, block in enumerate(content if isinstance(content, list) else []):
            events += self._block(index, block)
        self.done = True
        return events

    def finish(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = [self.blocks[index].finish() for index in sorted(self.blocks)]
        if self.saw_usage:
            events.append(Usage(self.input, self.output, self.cache_read, self.cache_write))
        return events


class AnthropicProvider(HttpProvider):
    """Streams one Messages-API message per step."""

    kind = "anthropic"
    default_base_url = DEFAULT_BASE_URL

    def _new_reader(self) -> StepReader:
        return _Reader(self)

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers

    def _models_url(self) -> httpx.URL:
        return models_url(self.base_url)

    def _models_headers(self, key: str | None) -> dict[str, str]:
        return self._auth_headers(key)

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system, converted = to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._max_tokens or DEFAULT_MAX_TOKENS,
            "messages": converted,
            "stream": True,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [to_anthropic_tool(t) for t in tools]
        if self._temperature is not None:
            body["temperature"] = min(self._temperature, 1.0)  # the Messages API takes 0 to 1
        return body

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        if not self.model:
            raise ProviderError(f"{self.name} has no model: set `model` on the agent or on the provider in the config.")
        url = self._check_url(messages_url)
        key = self.api_key()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **self._auth_headers(key)}
        async for event in self._post(url, self.request_body(messages, tools), headers, key):
            yield event
