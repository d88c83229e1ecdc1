"""What each method answers, beyond what the registry declares to dispatch it: its summary, its result model, the
errors it can answer besides those every method can, and the daemon→client traffic it causes. With the registry
(params, grant, local-only) this is the contract `rpc.discover` publishes (rpc/openrpc.py).

Kept beside the registry rather than in it: the result models are needed only when a document is built, and a
daemon that is never asked for one never builds them (start-up imports nothing of this). A unit test holds the
two together: every registered method has a contract and every contract a method (test_openrpc.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_type_hints

import msgspec
from msgspec import UNSET, Meta, UnsetType

from app.sessions.events import SessionEvent
from rpc import errors as e
from rpc import results as r
from rpc.wire import camel, not_standard

__all__ = ["CONTRACTS", "ERROR_KINDS", "NOTIFICATIONS", "SERVER_REQUESTS", "Contract", "ErrorKind", "Traffic"]

Model = Any  # a Struct, another type msgspec describes, or a function that makes one on first use


@dataclass(frozen=True, slots=True)
class Contract:
    summary: str
    result: Model  # None: a notification the client sends, never answered
    errors: tuple[str, ...] = ()  # error kinds (`ERROR_KINDS`) this method answers besides the common ones
    notifications: tuple[str, ...] = ()  # daemon→client notifications it causes on the caller's connection
    server_requests: tuple[str, ...] = ()  # daemon→client requests it may make
    storage: bool = False  # it reads or writes the database: storage_unavailable, resources_exhausted

    def result_models(self) -> tuple[Any, ...]:
        """The result's models: one, or the alternatives it may be."""
        result = self.result() if callable(self.result) and not isinstance(self.result, type) else self.result
        return result if isinstance(result, tuple) else (result,)


# -- errors: one entry per `data.kind`, with the shape of `data` ----------------------------------------------


class ErrorData(msgspec.Struct, frozen=True, kw_only=True):
    """Every error's `data`: its `kind`, and what the kind adds. Other keys may follow (a newer daemon's)."""

    kind: str


class FieldError(msgspec.Struct, frozen=True, kw_only=True):
    field: str  # camelCase (snake_case for `file/*`); `env.*` for an entry of a map; "" for the params as a whole
    type: str  # pydantic-compatible: missing, string_type, string_too_long, unknown_agent, …
    message: str | UnsetType = UNSET


class InvalidParamsData(ErrorData, frozen=True):
    errors: list[FieldError]
    limit: int | UnsetType = UNSET  # with string_too_long: the bound
    index: int | UnsetType = UNSET  # `config/set-many`: the entry at fault
    prop: str | UnsetType = UNSET


class ForbiddenData(ErrorData, frozen=True):
    grant: str | UnsetType = UNSET  # the grant that is missing
    prop: str | UnsetType = UNSET  # a config path outside the caller's write paths
    index: int | UnsetType = UNSET
    agent: bool | UnsetType = UNSET  # the caller may not use this agent


class ErrorIdData(ErrorData, frozen=True):
    error_id: Annotated[str, Meta(description="quote it: the daemon's log has the details under it")] | UnsetType = (
        UNSET
    )
    reason: str | UnsetType = UNSET


class LimitData(ErrorData, frozen=True):
    name: str  # which limit: connections, upload_bytes, …
    limit: int


class VersionData(ErrorData, frozen=True):
    supported: list[int]
    requested: int


@dataclass(frozen=True, slots=True)
class ErrorKind:
    error: type[e.RpcError]
    data: type[ErrorData] = ErrorData
    message: str | None = None  # the kind's usual message, when not its class's

    @property
    def text(self) -> str:
        return self.message or self.error.default_message


ERROR_KINDS: dict[str, ErrorKind] = {
    "invalid_params": ErrorKind(e.InvalidParams, InvalidParamsData),
    "internal_error": ErrorKind(e.InternalError, ErrorIdData),
    "storage_unavailable": ErrorKind(e.StorageUnavailable, ErrorIdData),
    "resources_exhausted": ErrorKind(e.ResourcesExhausted, ErrorIdData),
    "auth_required": ErrorKind(e.AuthRequired),
    "forbidden": ErrorKind(e.Forbidden, ForbiddenData),
    "local_only": ErrorKind(e.Forbidden, message="This method is only served on the local endpoint"),
    "version_mismatch": ErrorKind(e.VersionMismatch, VersionData),
    "session_not_found": ErrorKind(e.SessionNotFound),
    "session_changed": ErrorKind(e.SessionNotFound, message="The session was replaced while the call waited"),
    "session_limit": ErrorKind(e.SessionLimit),
    "session_busy": ErrorKind(e.SessionBusy),
    "session_not_owned": ErrorKind(e.SessionNotOwned),
    "upload_not_found": ErrorKind(e.UploadNotFound),
    "limit_exceeded": ErrorKind(e.LimitExceeded, LimitData),
}
_SESSION = ("session_not_found", "session_changed", "session_not_owned")


# -- daemon → client traffic ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Traffic:
    """A daemon→client notification or request: its params model, and a request's answer model."""

    summary: str
    params: Model
    result: Model = None


def _event_model(event: type) -> type[msgspec.Struct]:
    """A `session/update` event as the standard dialect sends it (`rpc.wire.events_to_wire`)."""
    hints = get_type_hints(event)
    kind = get_args(hints["type"])[0]
    omitted = not_standard(kind)
    fields = [(camel(name), hint) for name, hint in hints.items() if name not in omitted]
    title = "".join(part.title() for part in kind.split("_")) + "Update"
    return msgspec.defstruct(title, fields, module=__name__, forbid_unknown_fields=True, frozen=True, kw_only=True)


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
    timestamp: r.DateTime = msgspec.field(name="@timestamp")
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


# -- the methods --------------------------------------------------------------------------------------------

UPDATES = ("session/update",)


def _contracts() -> dict[str, Contract]:
    c = Contract
    return {
        "initialize": c(
            "Open the conversation: protocol version, credential, capabilities",
            r.Initialized,
            ("auth_required", "version_mismatch"),
            storage=True,
        ),
        "rpc.discover": c("This OpenRPC document (answered before initialize too)", r.OpenRpcDocument),
        "status": c("The daemon's status", r.Status),
        "system/metrics": c("The daemon's metrics in the Prometheus text format 0.0.4", str),
        "pairing/create": c("Pair a user: a new bearer token, shown once", r.PairedToken, ("forbidden",), storage=True),
        "pairing/code": c("A one-time 6-digit code a browser trades for a token at POST /pair", r.PairingCode),
        "pairing/list": c("The active paired tokens (admin: everyone's)", r.TokenList, storage=True),
        "pairing/revoke": c("Revoke a paired token", r.TokenRevoked, storage=True),
        "config/get": c("The config with secrets masked, or one property's value", _config_get_result),
        "config/set": c("Set one config property (written to config.toml atomically)", r.ConfigSet),
        "config/delete": c("Remove one config property (back to its default)", r.ConfigDeleted),
        "config/set-many": c("Set several config properties in one commit", r.ConfigSetMany),
        "config/sections": c("The config's sections, for a settings screen", r.ConfigSections),
        "config/list": c("The config's leaves and their values (secrets masked)", r.ConfigEntries),
        "config/map-keys": c("The entry names of one map section of the config", r.ConfigMapKeys),
        "config/templates": c("The config's map sections, for adding an entry", r.ConfigTemplates),
        "session/new": c(
            "Open a session, or resume one by its id; this connection then watches it",
            r.SessionOpened,
            ("forbidden", "session_limit", *_SESSION),
            UPDATES,
            storage=True,
        ),
        "session/prompt": c(
            "Run one turn; its progress streams as session/update, and it answers when the turn ends",
            r.PromptResult,
            ("forbidden", "session_limit", "session_busy", *_SESSION),
            UPDATES,
            ("elicitation/create",),
            storage=True,
        ),
        "session/cancel": c("Cancel the running turn (a no-op when none runs)", r.Cancelled, _SESSION),
        "session/approve": c("Answer a tool's approval_request", r.Approved, _SESSION),
        "session/list": c("The caller's sessions (an admin's: everyone's)", r.SessionList, storage=True),
        "session/list-acp": c("The caller's ACP sessions", r.SessionList, storage=True),
        "session/messages": c("A page of a session's visible transcript", r.Messages, _SESSION, storage=True),
        "session/close": c("Close a session: kept, resumable by session/new", r.Closed, _SESSION, storage=True),
        "session/kill": c("Kill a session: stopped and no longer resumable", r.Killed, _SESSION, storage=True),
        "session/delete": c("Delete a session and its transcript", r.Deleted, _SESSION, storage=True),
        "agents/status": c("The configured agents, as the caller may use them", r.AgentList, storage=True),
        "logs/subscribe": c("Receive the daemon's log records as logs/event", r.LogSubscription, (), ("logs/event",)),
        "file/attach": c(
            "Attach small files to a session in one call (base64)",
            r.attached,
            ("forbidden", "limit_exceeded", *_SESSION),
            storage=True,
        ),
        "file/upload/begin": c(
            "Begin a chunked upload to a session", r.upload_begun, ("forbidden", "limit_exceeded", *_SESSION)
        ),
        "file/upload/chunk": c(
            "Send the next chunk of an upload", r.ChunkReceived, ("upload_not_found", "limit_exceeded")
        ),
        "file/upload/commit": c(
            "Finish an upload: checked, stored, attached to its session",
            r.attach_entry,
            ("upload_not_found", "limit_exceeded", *_SESSION),
            storage=True,
        ),
    }


def _config_get_result() -> tuple[Any, ...]:
    from app.config.schema import Config

    return (Config, r.ConfigProp)  # the whole config, or {prop, value} with `prop`


CONTRACTS: dict[str, Contract] = _contracts()
