"""The embedded offline provider (`kind = "scripted"`, R-AGENT-2): deterministic answers from a tiny grammar.

It reads the LAST user message alone (or, right after a tool call, the tool results) and never the network, so a
fresh install works with no keys and tests can drive every kind of turn event. The grammar is in docs/agents.md:

    plain text          -> "You said: «text»" in several chunks
    /think T            -> a thought chunk T, then a short reply
    /bash CMD           -> bash tool call       (then "Command output:\n…")
    /ask Q              -> ask_user tool call   (then "Answer: «…»")
    /poll Q | A | B     -> poll tool call       (then "Choice: «…»")
    /write PATH | TEXT  -> write_file tool call (then "write_file: …")
    /read PATH          -> read_file tool call  (then "File contents:\n…")
    /tool NAME JSON     -> a call of any tool by name with JSON object arguments (then "NAME returned:\n…")
    /tools NAME JSON    -> one such call per line, each in a step of its own (then "NAME returned:\n…" for the last)
    /sleep S            -> "." every 0.1 s for S seconds
    /stream N           -> N chunks "lorem ", in bursts of 256, as fast as the turn takes them (a workload)
    /fail               -> ProviderError
    /context            -> one line per message given: "role: <first 80 chars>"
    /model              -> "model: M, temperature: T": what it was built with (R-MODEL-4; "default" when unset)

Every step that does not fail ends with a `Usage` (R-MODEL-5) counted in whitespace-separated words: input, the
words of every message it was given; output, the words it streamed (text and thoughts) and the words of its tool
calls' argument values. No cache tokens.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app.agents.base import (
    Message,
    ProviderError,
    ProviderEvent,
    TextChunks,
    TextDelta,
    ThoughtDelta,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = ["FAIL_MESSAGE", "MAX_SLEEP_SECS", "MAX_STREAM_CHUNKS", "STREAM_BURST", "ScriptedProvider", "split_chunks"]

FAIL_MESSAGE = "scripted provider failure (requested by /fail)"
MAX_SLEEP_SECS = 600.0
CONTEXT_PREVIEW_CHARS = 80
MAX_CHUNKS = 8
MAX_STREAM_CHUNKS = 1_000_000
STREAM_BURST = 256  # `/stream` chunks handed over at once
_TIMER_RESOLUTION_SECS = 0.001

_DIRECTIVE_RE = re.compile(r"/([A-Za-z]+)(?:\s+(.*))?\Z", re.DOTALL)
_TOOL_ID_RE = re.compile(r"tc_(\d+)\Z")
# Cut where a word begins: chunks keep their trailing whitespace and join to the reply exactly.
_WORD_BOUNDARY_RE = re.compile(r"(?<=\s)(?=\S)")

# What the reply after a tool result starts with, per tool.
_RESULT_PREFIX = {
    "bash": "Command output:\n",
    "read_file": "File contents:\n",
    "write_file": "write_file: ",
}
_RESULT_QUOTED = {"ask_user": "Answer", "poll": "Choice"}


def split_chunks(text: str, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """Split `text` into at most `max_chunks` runs of whole words whose concatenation is `text`.

    A reply of 3 to 8 words streams one word per chunk; a longer one groups words evenly.
    """
    if not text:
        return []
    words = _WORD_BOUNDARY_RE.split(text)
    per_chunk = math.ceil(len(words) / max_chunks)
    return ["".join(words[i : i + per_chunk]) for i in range(0, len(words), per_chunk)]


def next_tool_call_id(messages: Sequence[Message]) -> str:
    """`tc_<n>` past every tool call the context already shows, so ids stay unique across turns.

    Both counts are taken (assistant tool calls and tool results) as well as the highest `tc_<k>` seen: trimming
    drops the oldest messages, so the highest surviving id keeps the sequence going where a count would restart.
    """
    calls = sum(len(m.tool_calls) for m in messages)
    results = sum(1 for m in messages if m.role == "tool")
    highest = 0
    for m in messages:
        ids = [c.id for c in m.tool_calls] + ([m.tool_call_id] if m.tool_call_id else [])
        for tool_id in ids:
            match = _TOOL_ID_RE.match(tool_id)
            if match:
                highest = max(highest, int(match.group(1)))
    return f"tc_{max(calls, results, highest) + 1}"


def _preview(content: str) -> str:
    # One line per message: newlines inside the first 80 characters become spaces.
    return content[:CONTEXT_PREVIEW_CHARS].replace("\r", " ").replace("\n", " ")


def _tool_name(message: Message, messages: Sequence[Message]) -> str:
    if message.name:
        return message.name
    for m in messages:
        for call in m.tool_calls:
            if call.id == message.tool_call_id:
                return call.name
    return "tool"


def _after_tools(messages: Sequence[Message]) -> str:
    """The reply to the tool results that end the context (the step after a tool call)."""
    trailing: list[Message] = []
    for m in reversed(messages):
        if m.role != "tool":
            break
        trailing.append(m)
    parts = []
    for m in reversed(trailing):
        name = _tool_name(m, messages)
        if name in _RESULT_QUOTED:
            parts.append(f"{_RESULT_QUOTED[name]}: «{m.content}»")
        else:
            parts.append(_RESULT_PREFIX.get(name, f"{name} returned:\n") + m.content)
    return "\n".join(parts)


def _named_call(line: str) -> tuple[str, dict[str, Any]] | None:
    """`NAME JSON` (JSON an object, or nothing for `{}`), or None."""
    name, _, given = line.strip().partition(" ")
    try:
        parsed: object = json.loads(given) if given.strip() else {}
    except ValueError:
        parsed = None
    if not name or not isinstance(parsed, dict):
        return None
    return name, parsed


def _next_chained(relevant: Sequence[Message]) -> ToolCall | None:
    """After a `/tools` prompt's call: its next line's call, while there is one (a valid one)."""
    last_user = max((i for i, m in enumerate(relevant) if m.role == "user"), default=None)
    if last_user is None:
        return None
    match = _DIRECTIVE_RE.match(relevant[last_user].content.strip())
    if match is None or match.group(1).lower() != "tools":
        return None
    lines = [line for line in (match.group(2) or "").strip().splitlines() if line.strip()]
    done = sum(1 for m in relevant[last_user:] if m.role == "tool")
    if done >= len(lines):
        return None
    parsed = _named_call(lines[done])
    if parsed is None:
        return None
    return ToolCall(id=next_tool_call_id(relevant), name=parsed[0], arguments=parsed[1])


class ScriptedProvider:
    """Deterministic, offline `Provider`. `chunk_delay` spaces text chunks; `tick_secs` paces `/sleep`."""

    kind = "scripted"

    def __init__(
        self,
        *,
        chunk_delay: float = 0.0,
        tick_secs: float = 0.1,
        model: str | None = None,
        temperature: float | None = None,
    ) -> None:
        self._chunk_delay = chunk_delay
        self._tick_secs = tick_secs
        self.model = model or "scripted"
        self.temperature = temperature

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        output = 0
        async for event in self._step(messages):
            if isinstance(event, TextChunks):
                output += len(event.texts)  # only `/stream` hands chunks over together, each one word ("lorem ")
            elif isinstance(event, (TextDelta, ThoughtDelta)):
                output += len(event.text.split())
            elif isinstance(event, ToolCall):
                output += sum(len(str(v).split()) for v in event.arguments.values())
            yield event
        yield Usage(input_tokens=sum(len(m.content.split()) for m in messages), output_tokens=output)

    async def _step(self, messages: Sequence[Message]) -> AsyncIterator[ProviderEvent]:
        # System prompts may be injected after the user message; they never decide the answer.
        relevant = [m for m in messages if m.role != "system"]
        if relevant and relevant[-1].role == "tool":
            chained = _next_chained(relevant)
            if chained is not None:
                yield chained
                return
            async for event in self._text(_after_tools(messages)):
                yield event
            return
        prompt = next((m.content for m in reversed(relevant) if m.role == "user"), None)
        if prompt is None:
            async for event in self._text("There is no user message to answer."):
                yield event
            return
        async for event in self._answer(prompt.strip(), messages):
            yield event

    async def _answer(self, prompt: str, messages: Sequence[Message]) -> AsyncIterator[ProviderEvent]:
        match = _DIRECTIVE_RE.match(prompt)
        directive = match.group(1).lower() if match else ""
        arg = (match.group(2) or "").strip() if match else ""
        call = self._tool_call(directive, arg, messages)
        if isinstance(call, ToolCall):
            yield call
            return
        if call is not None:  # a usage sentence for a directive with bad arguments
            async for event in self._text(call):
                yield event
            return
        if directive == "fail":
            raise ProviderError(FAIL_MESSAGE)
        if directive == "think" and arg:
            yield ThoughtDelta(arg)
            text = "I have thought it over."
        elif directive == "sleep":
            async for event in self._sleep(arg):
                yield event
            return
        elif directive == "stream":
            async for event in self._stream(arg):
                yield event
            return
        elif directive == "context":
            text = "\n".join(f"{m.role}: {_preview(m.content)}" for m in messages)
        elif directive == "model":
            temperature = "default" if self.temperature is None else f"{self.temperature:g}"
            text = f"model: {self.model}, temperature: {temperature}"
        else:  # plain text, an unknown directive, or `/think` with nothing to think
            text = f"You said: «{prompt}»"
        async for event in self._text(text):
            yield event

    @staticmethod
    def _tool_call(directive: str, arg: str, messages: Sequence[Message]) -> ToolCall | str | None:
        """The tool call a directive asks for, a usage sentence if its arguments are bad, or None."""
        arguments: dict[str, Any]
        if directive == "bash":
            if not arg:
                return "Usage: /bash CMD"
            name, arguments = "bash", {"command": arg}
        elif directive == "ask":
            if not arg:
                return "Usage: /ask QUESTION"
            name, arguments = "ask_user", {"question": arg}
        elif directive == "poll":
            question, *raw = (part.strip() for part in arg.split("|"))
            options = list(dict.fromkeys(o for o in raw if o))  # drop empties and duplicates, keep order
            if not question or len(options) < 2:
                return "Usage: /poll QUESTION | OPTION | OPTION [| OPTION ...]"
            name, arguments = "poll", {"question": question, "options": options}
        elif directive == "write":
            path, sep, text = arg.partition("|")
            if not path.strip() or not sep:
                return "Usage: /write PATH | TEXT"
            name, arguments = "write_file", {"path": path.strip(), "content": text.strip()}
        elif directive == "read":
            if not arg:
                return "Usage: /read PATH"
            name, arguments = "read_file", {"path": arg}
        elif directive == "tool" or directive == "tools":
            first = arg if directive == "tool" or not arg.strip() else arg.strip().splitlines()[0]
            parsed = _named_call(first)
            if parsed is None:
                return f"Usage: /{directive} NAME {{JSON arguments}}"
            name, arguments = parsed
        else:
            return None
        return ToolCall(id=next_tool_call_id(messages), name=name, arguments=arguments)

    async def _sleep(self, arg: str) -> AsyncIterator[ProviderEvent]:
        try:
            seconds = float(arg)
        except ValueError:
            seconds = math.nan
        if not 0 <= seconds <= MAX_SLEEP_SECS:  # also refuses NaN
            async for event in self._text(f"Usage: /sleep SECONDS (0 to {MAX_SLEEP_SECS:g})"):
                yield event
            return
        deadline = time.monotonic() + seconds
        yield TextDelta(f"Sleeping for {seconds:g} s")
        # A cancelled turn stops here, at most one tick late. The last millisecond is not waited for:
        # uvloop's timers count whole ones (docs/agents.md, `/sleep`).
        while (left := deadline - time.monotonic()) > _TIMER_RESOLUTION_SECS:
            await asyncio.sleep(min(self._tick_secs, left))
            yield TextDelta(".")
        yield TextDelta(" Done.")

    async def _stream(self, arg: str) -> AsyncIterator[ProviderEvent]:
        count = int(arg) if arg.isdigit() else -1
        if not 0 < count <= MAX_STREAM_CHUNKS:
            async for event in self._text(f"Usage: /stream CHUNKS (1 to {MAX_STREAM_CHUNKS})"):
                yield event
            return
        # As fast as a provider can: whole bursts of ready chunks, like a network read full of deltas.
        burst = TextChunks(("lorem ",) * STREAM_BURST)
        full, rest = divmod(count, STREAM_BURST)
        for _ in range(full):
            yield burst
        if rest:
            yield TextChunks(burst.texts[:rest])

    async def _text(self, text: str) -> AsyncIterator[ProviderEvent]:
        for i, chunk in enumerate(split_chunks(text)):
            if i:
                await asyncio.sleep(self._chunk_delay)  # also lets other tasks run between chunks
            yield TextDelta(chunk)
