"""The answer shapes of the REST surface, as msgspec Structs, so `/openapi.json` states them from one place
(`gateway/openapi/`). They describe what the routes answer today, exactly: unknown keys are refused, so a unit
test that converts real answers into them (tests/unit/gateway/test_gateway_openapi.py) fails on any drift.

The answers a route shares with its JSON-RPC twin (`Status`, `SessionList`, `Messages`, …) are the RPC results of
their method families (`rpc/methods/*.py`, beside the handlers), which the OpenRPC document states too: one model
for both documents.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from rpc.core.answers import wire_model
from rpc.methods.config import ConfigProp, ConfigSet
from rpc.methods.lifecycle import STATUS_PROTOCOL_FIELDS, Status
from rpc.methods.lifecycle import GatewayInfoModel as GatewayInfo
from rpc.methods.pairing import PAIRING_CODE_PATTERN, PairedToken
from rpc.methods.session import MessageRow, Messages, PromptResult, SessionList, SessionRow, SessionUsage

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
    "SessionUsage",
    "Status",
    "WebhookResult",
    "wire_model",
]


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


class WebhookResult(_Answer, frozen=True):
    session_id: str
    content: str
