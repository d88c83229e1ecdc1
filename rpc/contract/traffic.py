"""What the daemon sends a client unasked: notifications (`session/update`, `logs/event`) and requests
(`elicitation/create`), each with its params model (and a request's answer model), as the OpenRPC document
declares them under `x-notifications` and `x-server-requests` (rpc/contract/openrpc.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args, get_type_hints, is_typeddict

import msgspec
from msgspec import UNSET, UnsetType

from app.sessions.events import SessionEvent
from rpc.core.answers import DateTime
from rpc.core.wire import camel, not_standard

__all__ = ["NOTIFICATIONS", "SERVER_REQUESTS", "Traffic"]

Model = Any  # a Struct, another type msgspec describes, or a function that makes the models on first use


@dataclass(frozen=True, slots=True)
class Traffic:
    """A daemon→client notification or request: its params model, and a request's answer model."""

    summary: str
    params: Model
    result: Model = None


def _event_model(event: type) -> type[msgspec.Struct]:
    """A `session/update` event as the standard dialect sends it (`rpc.core.wire.events_to_wire`)."""
    hints = get_type_hints(event)
    kind = get_args(hints["type"])[0]
    omitted = not_standard(kind)
    fields = [(camel(name), _nested(hint)) for name, hint in hints.items() if name not in omitted]
    title = "".join(part.title() for part in kind.split("_")) + "Update"
    return msgspec.defstruct(title, fields, module=__name__, forbid_unknown_fields=True, frozen=True, kw_only=True)


def _nested(hint: Any) -> Any:
    """A nested value of ours (`turn_complete.usage`) with its keys as the wire renames them."""
    if not is_typeddict(hint):
        return hint
    fields = [(camel(name), inner) for name, inner in get_type_hints(hint).items()]
    return msgspec.defstruct(
        hint.__name__, fields, module=__name__, forbid_unknown_fields=True, frozen=True, kw_only=True
    )


def session_update_models() -> list[type[msgspec.Struct]]:
    """One model per event type, in the order the domain declares them."""
    return [_event_model(event) for event in get_args(SessionEvent)]


class LogEventInfo(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    category: str  # the logger: zeroclaw.audit, zeroclaw.sessions, …
    action: Literal["log"]
    outcome: Literal["unknown"]


class LogEvent(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One daemon log record (ZeroClaw's LogEvent, schema 2; docs/protocol.md)."""

    id: str
    timestamp: DateTime = msgspec.field(name="@timestamp")
    severity_number: Literal[9, 13, 17, 21]
    severity_text: Literal["INFO", "WARN", "ERROR", "CRITICAL"]
    event: LogEventInfo
    service: Literal["zeroclaw"]
    message: str
    schema_version: Literal[2]


class ElicitationRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True, rename="camel"):
    """A question a tool asks during a turn, as a form (MCP's elicitation)."""

    session_id: str
    mode: Literal["form"]
    message: str
    requested_schema: dict[str, Any]  # a flat JSON Schema object: the form's fields


class ElicitationAnswer(msgspec.Struct, frozen=True, kw_only=True):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | UnsetType = UNSET  # with accept: the form's values


NOTIFICATIONS: dict[str, Traffic] = {
    "session/update": Traffic("A turn's progress on a session this connection watches", session_update_models),
    "logs/event": Traffic("One daemon log record, after logs/subscribe", LogEvent),
}
SERVER_REQUESTS: dict[str, Traffic] = {
    "elicitation/create": Traffic(
        "A tool asks the prompting client a question (only if it declared the elicitation capability)",
        ElicitationRequest,
        ElicitationAnswer,
    ),
}
