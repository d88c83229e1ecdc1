"""One turn: prompt → provider steps → tool calls → final text, streamed as `session/update` events.

Every transcript row is committed as it happens (R-ACP-4): the user prompt first, assistant text as soon as it
starts and then at most every `TEXT_CHECKPOINT_SECS` and at every tool boundary, each tool call and result.
Order per session is the order of `Updates` calls, which this task awaits one by one (R-STREAM-2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from app.agents.base import (
    Message,
    Provider,
    ProviderError,
    TextChunks,
    TextDelta,
    ThoughtDelta,
    Tool,
    ToolCall,
    Usage,
)
from app.sessions.live.guard import guarded_run
from app.sessions.live.session import LiveSession
from app.sessions.live.steer import join_steers
from app.sessions.live.turn_settings import TurnSettings, Updates
from app.sessions.live.usage import UsageMeter
from app.telemetry import current_turn

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.transcript import Transcript

__all__ = ["TEXT_CHECKPOINT_SECS", "TurnOutcome", "run_turn", "to_messages"]

log = logging.getLogger("zeroclaw.sessions")

TEXT_CHECKPOINT_SECS = 0.25
_YIELD_EVERY = 64  # text chunks taken from a provider that never waits before letting other tasks run


@dataclass(slots=True)
class TurnOutcome:
    """How a turn ended and what it said: its id, stop reason and the text streamed (the prompt's answer)."""

    stop_reason: str = "end_turn"
    content: str = ""
    turn_id: str = ""
    streamed: list[str] = field(default_factory=list)
    usage: UsageMeter | None = None  # R-MODEL-5: each provider step's usage, counted (None: not counted)


def to_messages(context: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Provider context rows (OpenAI chat dicts, as the store rebuilds them) as `Message`s."""
    out: list[Message] = []
    for row in context:
        calls = row.get("tool_calls")
        out.append(
            Message(
                row["role"],
                row.get("content") or "",
                tuple(ToolCall(c["id"], c["function"]["name"], _args(c)) for c in calls) if calls else (),
                row.get("tool_call_id"),
                row.get("name"),
            )
        )
    return out


def _args(call: Mapping[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments") or "{}"
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    except orjson.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


class _Text:
    """The assistant text row of the current step, checkpointed on a clock rather than per chunk.

    The first chunk creates the row; later chunks are flushed at most every `TEXT_CHECKPOINT_SECS` by a
    timer, so text survives a crash even when the stream stalls right after it (R-ACP-4). Chunks are kept as
    a list and joined only when written: appending to one growing string would be quadratic.
    """

    def __init__(self, store: Transcript, live: LiveSession, row: Callable[..., dict[str, Any]]) -> None:
        self._store, self._live, self._row = store, live, row
        self.index: int | None = None
        self._chunks: list[str] = []
        self._saved_chunks = 0
        self._flusher: asyncio.Task[None] | None = None
        self._creating: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return "".join(self._chunks)

    def keep(self, chunks: Sequence[str]) -> None:
        """Note chunks before they are sent: a step cancelled anywhere after this still seals them."""
        self._chunks += chunks

    async def checkpoint(self) -> None:
        """Write what was kept: the row at the first chunk, then on the clock."""
        if self.index is None:
            if self._creating is None:
                self._creating = asyncio.get_running_loop().create_task(self._create(complete=False))
            # A cancelled step must still learn the row's index (`seal`), or it would write the text twice.
            await asyncio.shield(self._creating)
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    async def _create(self, *, complete: bool) -> None:
        count = len(self._chunks)
        self.index = await self._store.append(
            self._live.session_id,
            **self._row(role="assistant", content="".join(self._chunks[:count]), complete=complete),
        )
        self._saved_chunks = count

    async def _flush_later(self) -> None:
        # `checkpoint` starts no timer while this runs: text that came during the write goes next round.
        while True:
            await asyncio.sleep(TEXT_CHECKPOINT_SECS)
            await self._write(complete=False)
            if len(self._chunks) == self._saved_chunks:
                return

    async def _write(self, *, complete: bool) -> None:
        count = len(self._chunks)
        if self.index is None or (count == self._saved_chunks and not complete):
            return
        await self._store.update_text(
            self._live.session_id, self.index, "".join(self._chunks[:count]), complete=complete, mode=self._live.mode
        )
        self._saved_chunks = count

    async def seal(self, *, ends_turn: bool = False) -> None:
        """Final write of the step's text; also called when the step is cancelled.

        When the step ends the turn and every chunk is already committed, nothing is written: `finish_turn`, the
        turn's next and last transaction, flags the row complete (and recovery does, should it never run).
        """
        flusher, self._flusher = self._flusher, None  # its exception's frame holds this object: no cycle kept
        if flusher is not None and not flusher.done():
            flusher.cancel()
        elif flusher is not None and not flusher.cancelled():
            flusher.exception()  # a failed flush (storage fault) is retrieved here; this write retries it
        creating, self._creating = self._creating, None
        if creating is not None:
            with contextlib.suppress(Exception):  # a failed write: the row is written below, whole
                await creating
        if self.index is None and self._chunks:  # cancelled before the first chunk's row was begun
            await self._create(complete=True)
            return
        if ends_turn and len(self._chunks) == self._saved_chunks:
            return
        await self._write(complete=True)


async def run_turn(
    live: LiveSession,
    prompt: str,
    *,
    turn_id: str,
    context: Sequence[Mapping[str, Any]],
    provider: Provider,
    tools: Mapping[str, Tool],
    store: Transcript,
    updates: Updates,
    settings: TurnSettings,
    outcome: TurnOutcome,
    before_step: Callable[[], Awaitable[None]] | None = None,
) -> TurnOutcome:
    """Run the turn body; `outcome` is filled in as it goes so a cancelled turn still knows what it streamed.
    `before_step`: called before each step after the first (`tools` may change: an MCP server's `list_changed`)."""

    def row(**fields: Any) -> dict[str, Any]:
        return {"mode": live.mode, "turn_id": turn_id, "surface": live.surface, **fields}

    async def say(chunks: Sequence[str]) -> None:
        outcome.streamed += chunks
        await updates.text(chunks)

    await store.append(live.session_id, **row(role="user", content=prompt))
    messages = to_messages(context)
    if settings.system_prompt:
        messages.insert(0, Message(role="system", content=settings.system_prompt))
    messages.append(Message(role="user", content=prompt))

    unyielded = 0  # events since the last yield to the loop, carried across steps
    trace = current_turn()  # R-MODEL-6: a `chat` span per step, an `execute_tool` span per call (no-op when off)
    for step in range(settings.max_steps):
        if step and before_step is not None:
            await before_step()
        # R-BRANCH-3: steers join here, after the previous step's stream and tool results, before the model runs.
        await join_steers(live.steers, live.session_id, messages, store, updates, row)
        specs = [tool.spec for tool in tools.values()]
        text = _Text(store, live, row)
        calls: list[ToolCall] = []
        try:
            events = trace.step(provider, provider.stream(messages, specs))
            unyielded = await _stream_step(events, text, calls, say, updates, live.session_id, unyielded, outcome.usage)
        except asyncio.CancelledError:  # wherever the step was (the provider, a send, a write): its text is kept once
            await asyncio.shield(text.seal())
            raise
        except ProviderError as exc:
            await text.seal()
            reason = str(exc) or "the provider failed"
            note = f"\n{reason}" if outcome.streamed else reason
            await say((note,))
            await store.append(live.session_id, **row(role="assistant", content=note))
            outcome.stop_reason = "failed"
            return outcome
        await text.seal(ends_turn=not calls)
        messages.append(Message(role="assistant", content=text.text, tool_calls=tuple(calls)))
        if not calls and not live.steers.pending:
            outcome.stop_reason = "end_turn"
            return outcome
        for call in calls:
            with trace.tool(call):
                result = await _run_tool(live, call, tools, store, updates, settings, row)
            messages.append(Message(role="tool", content=result, tool_call_id=call.id, name=call.name))
    outcome.stop_reason = "max_turns"
    return outcome


async def _stream_step(
    events: AsyncIterator[Any],
    text: _Text,
    calls: list[ToolCall],
    say: Callable[[Sequence[str]], Awaitable[None]],
    updates: Updates,
    session_id: str,
    unyielded: int,
    meter: UsageMeter | None = None,
) -> int:
    """One provider step: text said and checkpointed, thoughts sent, tool calls gathered into `calls`.

    Returns `unyielded`, the events taken since this task last let others run.
    """
    async for event in events:
        if isinstance(event, TextChunks):
            chunks: Sequence[str] = [t for t in event.texts if t]
        elif isinstance(event, TextDelta):
            chunks = (event.text,) if event.text else ()
        else:
            chunks = ()
            if isinstance(event, ThoughtDelta) and event.text:
                # Hidden reasoning is streamed but never stored as context (R-ACP-3).
                await updates.emit({"session_id": session_id, "type": "agent_thought_chunk", "text": event.text})
            elif isinstance(event, ToolCall):
                calls.append(event)
            elif isinstance(event, Usage) and meter is not None:
                await updates.emit(meter.step(session_id, event))  # once per step (R-MODEL-5)
        if chunks:
            text.keep(chunks)
            await say(chunks)
            await text.checkpoint()
        unyielded += len(chunks) or 1
        if unyielded >= _YIELD_EVERY:
            unyielded = 0
            await asyncio.sleep(0)  # a provider that never waits must not starve other connections
    return unyielded


async def _run_tool(
    live: LiveSession,
    call: ToolCall,
    tools: Mapping[str, Tool],
    store: Transcript,
    updates: Updates,
    settings: TurnSettings,
    row: Callable[..., dict[str, Any]],
) -> str:
    await store.append(
        live.session_id,
        **row(role="tool_call", content=orjson.dumps(call.arguments).decode(), tool_call_id=call.id, name=call.name),
    )
    await updates.emit(
        {
            "session_id": live.session_id,
            "type": "tool_call",
            "tool_call_id": call.id,
            "name": call.name,
            "raw_input": call.arguments,
        }
    )
    tool = tools.get(call.name)
    if tool is None:
        result = f"Unknown tool {call.name!r}: this agent has no such tool."
    else:
        result = await guarded_run(live, call, tool, updates, settings)
    await store.append(live.session_id, **row(role="tool_result", content=result, tool_call_id=call.id, name=call.name))
    await updates.emit(
        {
            "session_id": live.session_id,
            "type": "tool_result",
            "tool_call_id": call.id,
            "name": call.name,
            "raw_output": result,
        }
    )
    return result
