"""The `session/update` events a turn emits, as the domain spells them (snake_case keys).

The protocol boundary renames the keys for the wire (`rpc.wire.events_to_wire`, or the connection's dialect);
nested values (`raw_input`, `arguments`) are user data and keep their keys.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "ApprovalRequest",
    "HistoryTrimmed",
    "SessionEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnComplete",
]


class AgentMessageChunk(TypedDict):
    session_id: str
    type: Literal["agent_message_chunk"]
    text: str


class AgentThoughtChunk(TypedDict):
    session_id: str
    type: Literal["agent_thought_chunk"]
    text: str


class ToolCallEvent(TypedDict):
    session_id: str
    type: Literal["tool_call"]
    tool_call_id: str
    name: str
    raw_input: dict[str, Any]


class ToolResultEvent(TypedDict):
    session_id: str
    type: Literal["tool_result"]
    tool_call_id: str
    name: str
    raw_output: str


class ApprovalRequest(TypedDict):
    session_id: str
    type: Literal["approval_request"]
    request_id: str
    tool_name: str
    arguments: dict[str, Any]
    timeout_secs: float


class TurnComplete(TypedDict):
    session_id: str
    type: Literal["turn_complete"]
    stop_reason: str
    content: str


class HistoryTrimmed(TypedDict):
    session_id: str
    type: Literal["history_trimmed"]
    dropped_messages: int
    kept_messages: int
    checkpoint: int
    kept_turns: int  # user messages among the kept ones
    reason: str  # which limit was exceeded (`app.sessions.trim`)


SessionEvent = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallEvent
    | ToolResultEvent
    | ApprovalRequest
    | TurnComplete
    | HistoryTrimmed
)
