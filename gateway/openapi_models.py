"""The answer shapes of the REST surface, as pydantic models, so `/openapi.json` states them from one place
(`gateway/openapi.py`). They describe what the routes answer today, exactly: unknown keys are refused, so a unit
test that validates real answers against them (tests/unit/gateway/test_gateway_openapi.py) fails on any drift.

Also the one request body that no RPC params model covers: `POST /pair`'s, which the route validates with it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

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
    "PairBody",
    "PairedToken",
    "PromptResult",
    "SessionList",
    "SessionRow",
    "Status",
    "WebhookResult",
]

PAIRING_CODE_PATTERN = "^" + CODE_RE.pattern.removesuffix(r"\Z") + "$"
MAX_USER_CHARS = 128
MAX_LABEL_CHARS = 256
_DATE_TIME = {"format": "date-time"}


def _absent(schema: JsonDict) -> None:
    """An optional key that is left out, never null: the schema says `string`, not required, no default."""
    schema.clear()
    schema["type"] = "string"


class _Answer(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True)


class ErrorDetail(BaseModel):
    """`kind` and `message`, plus the kind's own data (`grant`, `errors`, `limit`, `retryAfter`, …)."""

    model_config = ConfigDict(extra="allow")
    kind: str
    message: str


class ErrorAnswer(_Answer):
    error: ErrorDetail


class Health(_Answer):
    status: Literal["ok"]


class OpenApiDocument(BaseModel):
    model_config = ConfigDict(extra="allow")
    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]


class PairBody(_Answer):
    """`POST /pair`'s optional body; unknown keys are ignored (the route reads only these two)."""

    model_config = ConfigDict(extra="ignore")
    user: Annotated[
        str | None, Field(min_length=1, max_length=MAX_USER_CHARS, description="must match the code's user if given")
    ] = None
    label: Annotated[str | None, Field(min_length=1, max_length=MAX_LABEL_CHARS)] = None


class PairedToken(_Answer):
    token_id: str
    token: Annotated[str, Field(pattern=r"^zc_[0-9a-f]{64}$")]
    user: str
    created_at: Annotated[str, Field(json_schema_extra=_DATE_TIME)]


class GatewayInfo(_Answer):
    url: str


class Status(_Answer):
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


class ConfigProp(_Answer):
    """`GET /api/config?prop=P`: the property's masked value (any JSON)."""

    prop: str
    value: Any


class ConfigSet(_Answer):
    prop: str
    set: Literal[True]


class SessionRow(_Answer):
    session_id: str
    agent_alias: str
    mode: Literal["acp", "chat"]
    live: bool
    killed: bool
    created_at: Annotated[str, Field(json_schema_extra=_DATE_TIME)]
    last_activity: Annotated[str, Field(json_schema_extra=_DATE_TIME)]
    message_count: int


class SessionList(_Answer):
    sessions: list[SessionRow]


class MessageRow(_Answer):
    """One transcript row; the three optional keys are absent (never null) when they do not apply."""

    index: int
    role: str
    content: str
    tool_call_id: str | None = Field(default=None, json_schema_extra=_absent)
    name: str | None = Field(default=None, json_schema_extra=_absent)
    marker: str | None = Field(default=None, json_schema_extra=_absent)


class Messages(_Answer):
    session_id: str
    messages: list[MessageRow]
    total: int


class PromptResult(_Answer):
    session_id: str
    stop_reason: Literal["end_turn", "cancelled", "failed", "max_turns"]
    content: str


class WebhookResult(_Answer):
    session_id: str
    content: str
