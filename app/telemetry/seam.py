"""The seam between the turn code and a tracer (R-MODEL-6): the protocols, the no-op tracer that costs nothing, and
the two context variables a turn's trace travels in (`current_turn()`, `trace_headers()`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, nullcontext, suppress
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from app.agents.base import ToolCall

__all__ = [
    "NOOP_TRACER",
    "NOOP_TURN",
    "Tracer",
    "TurnTrace",
    "current_turn",
    "enter_step",
    "enter_turn",
    "leave_step",
    "trace_headers",
]

E = TypeVar("E")


class TurnTrace(Protocol):
    """One turn's trace: the `invoke_agent` span and what runs inside it."""

    def step(self, provider: object, events: AsyncIterator[E]) -> AsyncIterator[E]:
        """A provider step's events, passed through unchanged inside a `chat` span (its `Usage` and tool calls
        read on the way; its `traceparent` in `trace_headers()` while the step runs)."""
        ...

    def tool(self, call: ToolCall) -> AbstractContextManager[object]:
        """An `execute_tool` span around one tool call (its approval included)."""
        ...

    def end(self, stop_reason: str) -> None:
        """End the turn's span with its stop reason."""
        ...


class Tracer(Protocol):
    def begin_turn(self, *, session_id: str, agent: str, turn_id: str) -> TurnTrace:
        """Start a turn's trace; it is this task's (and its child tasks') `current_turn()` from now on."""
        ...

    async def shutdown(self) -> None:
        """Export what is still buffered (bounded in time) and stop."""
        ...


class _NoopTurn:
    __slots__ = ()

    def step(self, provider: object, events: AsyncIterator[E]) -> AsyncIterator[E]:
        return events

    def tool(self, call: ToolCall) -> AbstractContextManager[object]:
        return _NULL

    def end(self, stop_reason: str) -> None:
        return None


class _NoopTracer:
    __slots__ = ()

    def begin_turn(self, *, session_id: str, agent: str, turn_id: str) -> TurnTrace:
        return NOOP_TURN

    async def shutdown(self) -> None:
        return None


_NULL: AbstractContextManager[object] = nullcontext()
_NO_HEADERS: Mapping[str, str] = {}
NOOP_TURN: TurnTrace = _NoopTurn()
NOOP_TRACER: Tracer = _NoopTracer()

_turn: ContextVar[TurnTrace] = ContextVar("zeroclaw_turn_trace")
_headers: ContextVar[Mapping[str, str]] = ContextVar("zeroclaw_trace_headers")


def current_turn() -> TurnTrace:
    """The trace of the turn this task runs (the no-op one when tracing is off)."""
    return _turn.get(NOOP_TURN)


def trace_headers() -> Mapping[str, str]:
    """The W3C trace-context headers (`traceparent`) of the provider step running now; empty when off."""
    return _headers.get(_NO_HEADERS)


def enter_turn(trace: TurnTrace) -> None:
    """`trace` is this task's turn from now on (the body task created after this inherits it)."""
    _turn.set(trace)


def enter_step(headers: Mapping[str, str]) -> Token[Mapping[str, str]]:
    return _headers.set(headers)


def leave_step(token: Token[Mapping[str, str]]) -> None:
    # ValueError: a step closed from another context (a generator finalized by the loop): nothing to undo there.
    with suppress(ValueError):
        _headers.reset(token)
