"""The answer shapes of the REST surface, as msgspec Structs (the library of the params and config models), so
`/openapi.json` states them from one place (`gateway/openapi.py`). They describe what the routes answer today,
exactly: unknown keys are refused, so a unit test that converts real answers into them
(tests/unit/gateway/test_gateway_openapi.py) fails on any drift.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from app.auth.pairing_codes import CODE_RE

__all__ = [
    "PAIRING_CODE_PATTERN",
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


class GatewayInfo(_Answer, frozen=True):
    url: str


class Status(_Answer, frozen=True):
    """`services.describe()` plus what the protocol layer knows, as the `status` method answers."""

    server_version: str
    pid: int
    endpoint: str
    gateway: GatewayInfo | None
    data_dir: str
    config_file: str
    uptime_secs: float
    active_sessions: int
    session_ids: list[str]
    protocol_version: int
    connections: int


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
