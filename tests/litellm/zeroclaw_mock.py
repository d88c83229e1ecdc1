"""A LiteLLM custom provider (LiteLLM's own `CustomLLM` extension point) that the proxy loads from config.yaml.

LiteLLM's `mock_response` models stream text, but its mock tool calls are dropped when streaming and its
`/v1/messages` mock is not streamed; a custom provider's `astreaming` is streamed by LiteLLM itself through both
`/v1/chat/completions` and `/v1/messages` (its Anthropic adapter), so the bytes our providers parse are LiteLLM's.

The reply depends on the last message, like the scripted provider's grammar:

    a tool result            -> "Tool said: «result»"
    "tool: CMD"              -> a `bash` tool call {"command": CMD}, its arguments streamed in pieces
    "tools: A | B"           -> two `bash` tool calls in one step
    "think: T"               -> (reasoning is not streamed by this handler) "Thought about T"
    "slow: S"                -> one chunk, then S seconds of silence, then the rest
    "long: N"                -> N chunks "word<i> " 20 ms apart (a stream to cut)
    anything else            -> "Hello from LiteLLM: «text»" in word chunks

Each reply ends with usage: input = words of all messages, output = words of the reply.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from litellm import CustomLLM
from litellm.types.utils import GenericStreamingChunk, ModelResponse


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _chunk(text: str = "", *, tool: dict[str, Any] | None = None, finish: str = "", usage: Any = None) -> Any:
    return GenericStreamingChunk(
        text=text,
        tool_use=tool,  # type: ignore[typeddict-item]
        is_finished=bool(finish),
        finish_reason=finish,
        usage=usage,
        index=0,
    )


def _plan(messages: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str]], float, float]:
    """(text chunks, tool calls (id, command), pause after the first chunk, delay between chunks)."""
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        return [f"Tool said: «{_text_of(last)}»"], [], 0.0, 0.0
    prompt = _text_of(last).strip()
    if prompt.startswith("tool: "):
        return ["Running it."], [("call_mock_1", prompt.removeprefix("tool: "))], 0.0, 0.0
    if prompt.startswith("tools: "):
        commands = [c.strip() for c in prompt.removeprefix("tools: ").split("|")]
        return ["Running both."], [(f"call_mock_{i + 1}", c) for i, c in enumerate(commands)], 0.0, 0.0
    if prompt.startswith("slow: "):
        return ["Thinking ", "slowly."], [], float(prompt.removeprefix("slow: ")), 0.0
    if prompt.startswith("long: "):
        return [f"word{i} " for i in range(int(prompt.removeprefix("long: ")))], [], 0.0, 0.02
    words = f"Hello from LiteLLM: «{prompt}»".split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)], [], 0.0, 0.0


class ZeroclawMock(CustomLLM):
    async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        messages: list[dict[str, Any]] = kwargs.get("messages") or (args[1] if len(args) > 1 else [])
        texts, calls, pause, delay = _plan(messages)
        input_words = sum(len(_text_of(m).split()) for m in messages)
        output_words = len("".join(texts).split())
        for i, text in enumerate(texts):
            yield _chunk(text)
            if i == 0 and pause:
                await asyncio.sleep(pause)
            elif delay:
                await asyncio.sleep(delay)
        for index, (call_id, command) in enumerate(calls):
            arguments = json.dumps({"command": command})
            half = len(arguments) // 2
            for part_no, part in enumerate((arguments[:half], arguments[half:])):
                tool = {
                    "id": call_id if part_no == 0 else None,
                    "type": "function",
                    "function": {"name": "bash" if part_no == 0 else None, "arguments": part},
                    "index": index,
                }
                yield _chunk(tool=tool)
        usage = {
            "prompt_tokens": input_words,
            "completion_tokens": output_words,
            "total_tokens": input_words + output_words,
        }
        yield _chunk(finish="tool_calls" if calls else "stop", usage=usage)

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        messages: list[dict[str, Any]] = kwargs.get("messages") or []
        texts, calls, _pause, _delay = _plan(messages)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
                for i, c in calls
            ]
        return ModelResponse(choices=[{"message": message, "finish_reason": "tool_calls" if calls else "stop"}])


handler = ZeroclawMock()


async def user_api_key_auth(request: Any, api_key: str) -> Any:
    """`general_settings.custom_auth`: the proxy's own key check answers 400 "No connected db." for a wrong key when
    it has no database; this one accepts the master key alone, so a wrong key gets LiteLLM's 401."""
    import os

    from fastapi import HTTPException
    from litellm.proxy._types import UserAPIKeyAuth

    if api_key == os.environ.get("LITELLM_MASTER_KEY"):
        return UserAPIKeyAuth(api_key=api_key)
    raise HTTPException(status_code=401, detail="Invalid API key")
