"""The answer shapes of the REST surface, as msgspec Structs (the library of the params and config models), so
`/openapi.json` states them from one place (`gateway/openapi.py`). They describe what the routes answer today,
exactly: unknown keys are refused, so a unit test that converts real answers into them
(tests/unit/gateway/test_gateway_openapi.py) fails on any drift.

`Status` (and its `GatewayInfo`) is not written here but derived from the domain's `app.services.DaemonStatus` as
`rpc.wire.to_wire` puts it on the wire (`wire_model`), so a field added there is in the document too.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from datetime import datetime
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import UNSET, Meta, UnsetType

from app import services
from app.auth.pairing_codes import CODE_RE
from rpc.wire import camel

__all__ = [
    "PAIRING_CODE_PATTERN",
    "STATUS_PROTOCOL_FIELDS",
    "ConfigProp",
    "ConfigSet",
    "ErrorAnswer",
    "GatewayInfo",
    "Health",
    "MessageRow",
    "Messages",
    "OpenApiDocument",
    "PairedToken",
    "PromptResult",
    "SessionList",
    "SessionRow",
    "Status",
    "WebhookResult",
    "wire_model",
]

PAIRING_CODE_PATTERN = "^" + CODE_RE.pattern.removesuffix(r"\Z") + "$"
DateTime = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]


class _Answer(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ErrorDetail(msgspec.Struct, frozen=True, kw_only=True):
    """`kind` and `message`, plus the kind's own data (`grant`, `errors`, `limit`, `retryAfter`, …)."""

    kind: str
    message: str


class ErrorAnswer(_Answer, frozen=True):
    error: ErrorDetail


class Health(_Answer, frozen=True):
    status: Literal["ok"]


class OpenApiDocument(msgspec.Struct, frozen=True, kw_only=True):
    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]


class PairedToken(_Answer, frozen=True):
    token_id: str
    token: Annotated[str, Meta(pattern=r"^zc_[0-9a-f]{64}$")]
    user: str
    created_at: DateTime


def wire_model(
    cls: type, *, name: str | None = None, doc: str | None = None, extra: tuple[tuple[str, Any], ...] = ()
) -> type[msgspec.Struct]:
    """The answer model of the domain dataclass `cls` as `rpc.wire.to_wire` puts it on the wire: its fields in
    order under their `camel` keys, then `extra` (name, type) fields; as strict as the models written here."""
    hints = get_type_hints(cls)
    fields = [(field.name, _wire_type(hints[field.name])) for field in dataclasses.fields(cls)]
    return msgspec.defstruct(
        name or cls.__name__,
        [*fields, *extra],
        module=__name__,
        namespace={"__doc__": doc},  # never the dataclass's own: that describes the domain value
        rename=camel,
        forbid_unknown_fields=True,
        frozen=True,
        kw_only=True,
    )


@functools.cache
def _nested_model(cls: type) -> type[msgspec.Struct]:
    return wire_model(cls)  # one model per dataclass: one schema in `components/schemas`


def _wire_type(hint: Any) -> Any:
    """The type of a field's wire value, as `to_wire` converts it."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _nested_model(hint)
    if hint is datetime:
        return DateTime
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, [_wire_type(arg) for arg in args])
    if origin is list or (origin is tuple and args[1:] == (...,)):
        return list[_wire_type(args[0])]  # type: ignore[misc]
    return hint


GatewayInfo = _nested_model(services.GatewayInfo)

# The keys the protocol layer adds after `describe()`'s (`rpc.methods.lifecycle.StatusAnswer`).
STATUS_PROTOCOL_FIELDS: tuple[tuple[str, Any], ...] = (("protocol_version", int), ("connections", int))
Status = wire_model(
    services.DaemonStatus,
    name="Status",
    doc="`services.describe()` plus what the protocol layer knows, as the `status` method answers.",
    extra=STATUS_PROTOCOL_FIELDS,
)


class ConfigProp(_Answer, frozen=True):
    """`GET /api/config?prop=P`: the property's masked value (any JSON)."""

    prop: str
    value: Any


class ConfigSet(_Answer, frozen=True):
    prop: str
    # Always true. A `Literal[True]` needs msgspec ≥ 0.19 (0.18 takes only None, int and str literals).
    set: Annotated[bool, Meta(extra_json_schema={"const": True})]


class SessionRow(_Answer, frozen=True):
    session_id: str
    agent_alias: str
    mode: Literal["acp", "chat"]
    live: bool
    killed: bool
    created_at: DateTime
    last_activity: DateTime
    message_count: int


class SessionList(_Answer, frozen=True):
    sessions: list[SessionRow]


class MessageRow(_Answer, frozen=True):
    """One transcript row; the three optional keys are absent (never null) when they do not apply."""

    index: int
    role: str
    content: str
    tool_call_id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    marker: str | UnsetType = UNSET


class Messages(_Answer, frozen=True):
    session_id: str
    messages: list[MessageRow]
    total: int


class PromptResult(_Answer, frozen=True):
    session_id: str
    stop_reason: Literal["end_turn", "cancelled", "failed", "max_turns"]
    content: str


class WebhookResult(_Answer, frozen=True):
    session_id: str
    content: str
