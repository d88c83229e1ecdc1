"""The seams between a turn and the things it drives: providers (the model) and tools.

A turn (app/sessions/live/turn.py) sends the retained context to a `Provider`, which streams `ProviderEvent`s;
tool calls the provider asks for are run through `Tool`s with a `ToolContext`. Nothing here knows about
JSON-RPC: reaching the client (elicitation) goes through the `PromptingClient` the turn is given.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from app.agents.sandbox import Sandbox

__all__ = [
    "Elicitation",
    "Message",
    "PromptingClient",
    "Provider",
    "ProviderError",
    "ProviderEvent",
    "TextChunks",
    "TextDelta",
    "ThoughtDelta",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "Usage",
]


# -- the context a provider is given ---------------------------------------------------------------


@dataclass(slots=True)
class Message:
    """One message of provider context, in OpenAI chat shape.

    role: "system" | "user" | "assistant" | "tool". An assistant message may carry `tool_calls`; a tool message
    answers one with `tool_call_id` and `name`.

    Not frozen: a turn builds its whole context (up to `[context] max_messages`) afresh, and a frozen dataclass's
    `__init__` costs four times a plain one's. Nothing outlives the turn, so a provider cannot change another's.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the provider is told about a tool (OpenAI `tools[].function`)."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments


# -- what a provider streams -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class TextChunks:
    """Several text deltas the provider had ready at once (e.g. one network read's worth).

    Each chunk still streams as its own `agent_message_chunk`, in order; handing them over together lets
    the turn encode and send them as one batch instead of one await chain per chunk.
    """

    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str  # e.g. "tc_1"; unique within the session
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one provider step cost, as the provider counted them (R-MODEL-5); sent once per step.

    `input_tokens` excludes the cached part: `cache_read_tokens` were read from the provider's prompt cache and
    `cache_write_tokens` written to it (Anthropic's `cache_creation_input_tokens`), each priced on its own.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


ProviderEvent = TextDelta | TextChunks | ThoughtDelta | ToolCall | Usage


class ProviderError(Exception):
    """The provider failed (HTTP error, bad stream, `/fail`): the turn ends with stopReason "failed".

    The message is shown to the client as the turn's content, so it must be a clear sentence without secrets.
    """


class Provider(Protocol):
    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ProviderEvent]:
        """One model step: stream text/thought deltas and then zero or more tool calls.

        The turn calls `stream` again after running the tool calls of a step (with their results appended to
        `messages`); a step that asks for no tool call ends the turn. Raise `ProviderError` on failure.
        Cancellation (asyncio.CancelledError) must stop the stream promptly.
        """
        ...


# -- tools -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Elicitation:
    """The client's answer to an `elicitation/create` (R-BIDI-5)."""

    action: Literal["accept", "decline", "cancel", "unanswered", "unavailable", "failed"]
    content: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None  # for unanswered/unavailable/failed: why, in words


class PromptingClient(Protocol):
    """The client that sent the prompt, as a turn's tools reach it: questions only
    (`rpc.core.session_bridge.Elicitor`)."""

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        """Ask the prompting client. Never raises: a missing capability is "unavailable", a timeout
        "unanswered", a disconnect or error answer "failed"."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: str
    workspace: Path
    client: PromptingClient
    bash_timeout_secs: float = 60.0
    ask_timeout_secs: float = 120.0
    output_limit_bytes: int = 65_536
    env: Mapping[str, str] | None = None  # set on top of the daemon's environment for commands (R-ZC-6)
    sandbox: Sandbox | None = None  # what `bash` runs under (R-GUARD-4); None: unsandboxed (tests, `off`)
    # A running call's progress (progress, total, message) as `tool_progress` (R-MCP-3); set per call by the guard.
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None


class Tool(Protocol):
    spec: ToolSpec
    needs_approval: bool  # default policy; `[agents.<a>] auto_approve` lifts it

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """Run and return the result text (becomes `tool_result.rawOutput`). Errors are results, not
        exceptions: a bad argument or a failed command returns a sentence saying so. Cancellation kills any
        subprocess before re-raising CancelledError."""
        ...
