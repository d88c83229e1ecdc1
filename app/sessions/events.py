"""The `session/update` events a turn emits, as the domain spells them (snake_case keys).

The protocol boundary renames the keys for the wire (`rpc.core.wire.events_to_wire`, or the connection's dialect);
nested values (`raw_input`, `arguments`) are user data and keep their keys. `seq` is given to each event as it is
sent (`app.sessions.live.updates`, R-MULTI-1): the turn that makes an event does not know it yet.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "ApprovalRequest",
    "ApprovalResolved",
    "ConfigChanged",
    "HistoryTrimmed",
    "RolledBack",
    "SessionEvent",
    "ToolCallEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "TurnComplete",
    "UsageEvent",
    "UsageSum",
    "UserMessage",
]


class AgentMessageChunk(TypedDict):
    session_id: str
    type: Literal["agent_message_chunk"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    text: str


class AgentThoughtChunk(TypedDict):
    session_id: str
    type: Literal["agent_thought_chunk"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    text: str


class ToolCallEvent(TypedDict):
    session_id: str
    type: Literal["tool_call"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    tool_call_id: str
    name: str
    raw_input: dict[str, Any]


class ToolResultEvent(TypedDict):
    session_id: str
    type: Literal["tool_result"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    tool_call_id: str
    name: str
    raw_output: str


class ApprovalRequest(TypedDict):
    session_id: str
    type: Literal["approval_request"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    request_id: str
    tool_name: str
    arguments: dict[str, Any]
    timeout_secs: float


class ApprovalResolved(TypedDict):
    """An `approval_request` was settled (R-MULTI-3): answered by one of the attached clients, or timed out."""

    session_id: str
    type: Literal["approval_resolved"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    request_id: str
    decision: str  # what took effect: allow_once, allow_always, reject (also after the timeout), reject_always,
    # reject_with_edit


class ToolProgressEvent(TypedDict):
    """A running tool's progress, as an MCP server reports it (R-MCP-3); `total` and `message` when it says."""

    session_id: str
    type: Literal["tool_progress"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    tool_call_id: str
    progress: float
    total: float | None
    message: str | None


class UsageEvent(TypedDict):
    """What one provider step cost (R-MODEL-5), sent as the step ends, before `turn_complete`."""

    session_id: str
    type: Literal["usage"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None  # from `[providers.<p>.pricing]`; None when unpriced
    # Not on the standard wire (`rpc.core.wire`): ACP's `usage_update` (tokens in context, the session's cost).
    context_tokens: int
    session_cost_usd: float | None


class UsageSum(TypedDict):
    """The turn's provider steps summed (`turn_complete.usage`); the wire renames its keys as the event's."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None  # None when any step was unpriced


class TurnComplete(TypedDict):
    session_id: str
    type: Literal["turn_complete"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    stop_reason: str
    content: str
    usage: NotRequired[UsageSum]  # R-MODEL-5: the turn's provider steps summed


class HistoryTrimmed(TypedDict):
    session_id: str
    type: Literal["history_trimmed"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    dropped_messages: int
    kept_messages: int
    checkpoint: int
    kept_turns: int  # user messages among the kept ones
    reason: str  # which limit was exceeded (`app.sessions.live.trim`)


class ConfigChanged(TypedDict):
    """The session's settings changed (`session/configure`, R-MODEL-4): the effective ones, from its next step."""

    session_id: str
    type: Literal["config_changed"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    agent_alias: str
    model: str | None
    temperature: float | None


class RolledBack(TypedDict):
    """`session/rollback` dropped the last `turns` turns, their rows from `from_index` on (R-BRANCH-2)."""

    session_id: str
    type: Literal["rolled_back"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    turns: int
    from_index: int


class UserMessage(TypedDict):
    """A user message joined the running turn (`session/steer`, R-BRANCH-3): its text and transcript index."""

    session_id: str
    type: Literal["user_message"]
    seq: NotRequired[int]  # per session, +1 each event (R-MULTI-1)
    text: str
    index: int


SessionEvent = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallEvent
    | ToolResultEvent
    | ApprovalRequest
    | ApprovalResolved
    | TurnComplete
    | HistoryTrimmed
    | ConfigChanged
    | UsageEvent
    | ToolProgressEvent
    | RolledBack
    | UserMessage
)
