"""What each JSON-RPC method answers, as msgspec Structs: the result schemas of the OpenRPC document
(rpc/contract/openrpc.py) and, for the methods REST shares, of `/openapi.json` (gateway/openapi_models.py).

They describe the standard dialect's answers exactly: unknown keys are refused, so the tests that convert real
answers into them (tests/unit/rpc/test_wire_samples.py, tests/unit/gateway/test_gateway_openapi.py) fail on any
drift. A result built from a domain dataclass is derived from it (`wire_model`), as `rpc.core.wire.to_wire` puts it on
the wire, so a field added there is in the documents too.

`app.files`'s answers are made on first use (`attach_entry`, …): a daemon never asked about files never imports it.
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
from app.agents.status import AgentStatus
from app.auth.pairing_codes import CODE_RE
from app.config import sections
from app.sessions.views import SessionInfo, SessionSummary
from rpc.core.wire import camel

__all__ = ["PAIRING_CODE_PATTERN", "STATUS_PROTOCOL_FIELDS", "Answer", "DateTime", "wire_model"]

PAIRING_CODE_PATTERN = "^" + CODE_RE.pattern.removesuffix(r"\Z") + "$"
DateTime = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
# Always true. A `Literal[True]` needs msgspec ≥ 0.19 (0.18 takes only None, int and str literals).
TRUE = Annotated[bool, Meta(extra_json_schema={"const": True})]


class Answer(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of the answers in camelCase."""


class SnakeAnswer(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of the answers whose keys are snake_case (`file/*`, as their params are)."""


# -- derived from the domain's dataclasses ---------------------------------------------------------


def wire_model(
    cls: type,
    *,
    name: str | None = None,
    doc: str | None = None,
    extra: tuple[tuple[str, Any], ...] = (),
    snake: bool = False,
) -> type[msgspec.Struct]:
    """The answer model of the domain dataclass `cls` as `rpc.core.wire.to_wire` puts it on the wire: its fields in
    order under their `camel` keys (their own with `snake`), then `extra` (name, type) fields; as strict as the
    models written here."""
    hints = get_type_hints(cls)
    fields = [(field.name, _wire_type(hints[field.name], snake)) for field in dataclasses.fields(cls)]
    return msgspec.defstruct(
        name or cls.__name__,
        [*fields, *extra],
        module=__name__,
        namespace={"__doc__": doc},  # never the dataclass's own: that describes the domain value
        rename=None if snake else camel,
        forbid_unknown_fields=True,
        frozen=True,
        kw_only=True,
    )


@functools.cache
def _nested_model(cls: type, snake: bool = False) -> type[msgspec.Struct]:
    return wire_model(cls, snake=snake)  # one model per dataclass: one schema in `components/schemas`


def _wire_type(hint: Any, snake: bool) -> Any:
    """The type of a field's wire value, as `to_wire` converts it."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _nested_model(hint, snake)
    if hint is datetime:
        return DateTime
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, [_wire_type(arg, snake) for arg in args])
    if origin is list or (origin is tuple and args[1:] == (...,)):
        return list[_wire_type(args[0], snake)]  # type: ignore[misc]
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
SessionOpened = wire_model(SessionInfo, name="SessionOpened", doc="A session opened, attached to or resumed.")
SessionRow = wire_model(SessionSummary, name="SessionRow", doc="One stored session.")
AgentRow = wire_model(AgentStatus, name="AgentRow", doc="One configured agent, as the caller may use it.")
ConfigSection = wire_model(sections.ConfigSection, doc="One top-level config section, for a settings screen.")
ConfigFieldEntry = wire_model(sections.ConfigFieldEntry, doc="One leaf of the config schema and its value.")
ConfigTemplate = wire_model(sections.ConfigTemplate, doc="One map section of the config, for adding entries.")


# -- lifecycle -------------------------------------------------------------------------------------


class PrincipalInfo(Answer, frozen=True):
    id: str
    admin: bool


class Initialized(Answer, frozen=True):
    protocol_version: int
    server_version: str
    server_pid: int
    principal: PrincipalInfo
    methods: list[str]


class OpenRpcDocument(msgspec.Struct, frozen=True, kw_only=True):
    """An OpenRPC 1.3.2 document (this one); its meta-schema is https://meta.open-rpc.org/."""

    openrpc: Literal["1.3.2"]
    info: dict[str, Any]
    methods: list[dict[str, Any]]
    servers: list[dict[str, Any]] | UnsetType = UNSET
    components: dict[str, Any] | UnsetType = UNSET


class LogSubscription(Answer, frozen=True):
    subscribed: bool  # false when the daemon's log stream is not installed (an embedded dispatcher)


# -- pairing ---------------------------------------------------------------------------------------


class PairedToken(Answer, frozen=True):
    token_id: str
    token: Annotated[str, Meta(pattern=r"^zc_[0-9a-f]{64}$")]
    user: str
    created_at: DateTime


class PairingCode(Answer, frozen=True):
    code: Annotated[str, Meta(pattern=PAIRING_CODE_PATTERN)]
    user: str
    expires_in_secs: int


class TokenRow(Answer, frozen=True):
    token_id: str
    user: str
    label: str | None
    created_at: DateTime
    last_used_at: DateTime | None


class TokenList(Answer, frozen=True):
    tokens: list[TokenRow]


class TokenRevoked(Answer, frozen=True):
    token_id: str
    revoked: TRUE


# -- config ----------------------------------------------------------------------------------------


class ConfigProp(Answer, frozen=True):
    """`config/get {prop}` (and `GET /api/config?prop=P`): the property's masked value (any JSON)."""

    prop: str
    value: Any


class ConfigSet(Answer, frozen=True):
    prop: str
    set: TRUE


class ConfigDeleted(Answer, frozen=True):
    prop: str
    deleted: TRUE


class ConfigSetMany(Answer, frozen=True):
    props: list[str]  # in request order, without duplicates
    set: TRUE


class ConfigSections(Answer, frozen=True):
    sections: list[ConfigSection]  # type: ignore[valid-type]


class ConfigEntries(Answer, frozen=True):
    entries: list[ConfigFieldEntry]  # type: ignore[valid-type]


class ConfigMapKeys(Answer, frozen=True):
    path: str
    keys: list[str]


class ConfigTemplates(Answer, frozen=True):
    templates: list[ConfigTemplate]  # type: ignore[valid-type]


# -- sessions --------------------------------------------------------------------------------------


class SessionList(Answer, frozen=True):
    """One page, newest activity first (R-MULTI-4); `nextCursor` asks for the next one, null on the last."""

    sessions: list[SessionRow]  # type: ignore[valid-type]
    next_cursor: str | None


class MessageRow(Answer, frozen=True):
    """One transcript row; the three optional keys are absent (never null) when they do not apply."""

    index: int
    role: str
    content: str
    tool_call_id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    marker: str | UnsetType = UNSET


class TurnEnd(Answer, frozen=True):
    index: int
    stop_reason: str


class Messages(Answer, frozen=True):
    """A page of the visible transcript; `turnEnds` only when asked for (`turnEnds: true`)."""

    session_id: str
    messages: list[MessageRow]
    total: int
    turn_ends: list[TurnEnd] | UnsetType = UNSET


StopReason = Literal["end_turn", "cancelled", "failed", "max_turns"]


class PromptResult(Answer, frozen=True):
    session_id: str
    stop_reason: StopReason
    content: str


class Cancelled(Answer, frozen=True):
    session_id: str
    cancelled: TRUE  # also when no turn runs: cancelling is idempotent


class SessionAttached(Answer, frozen=True):
    session_id: str
    seq: Annotated[int, Meta(ge=0)]  # the last update this connection has been sent (or would have been)
    replayed: Annotated[int, Meta(ge=0)]  # updates sent again, those after afterSeq, before this answer
    gap: bool  # some updates after afterSeq are no longer retained: read the transcript (session/messages)
    running: bool  # a turn runs now
    pending_approvals: list[str]  # request ids of the approval_requests still waiting for an answer


class SessionDetached(Answer, frozen=True):
    session_id: str
    detached: bool  # false when this connection was not following the session


class Approved(Answer, frozen=True):
    session_id: str
    request_id: str
    acknowledged: bool


class Closed(Answer, frozen=True):
    session_id: str
    closed: TRUE


class Killed(Answer, frozen=True):
    session_id: str
    killed: TRUE


class Deleted(Answer, frozen=True):
    session_id: str
    deleted: TRUE


class AgentList(Answer, frozen=True):
    agents: list[AgentRow]  # type: ignore[valid-type]


# -- files (snake_case, as their params) -----------------------------------------------------------


@functools.cache
def attach_entry() -> type[msgspec.Struct]:
    """The answer of `file/upload/commit` and each of `file/attach`'s (`app.files` is imported only here)."""
    from app.files.store import AttachEntry

    return _nested_model(AttachEntry, snake=True)


@functools.cache
def upload_begun() -> type[msgspec.Struct]:
    from app.files.service import BeginResult

    return _nested_model(BeginResult, snake=True)


class ChunkReceived(SnakeAnswer, frozen=True):
    upload_id: str
    received_bytes: int


@functools.cache
def attached() -> type[msgspec.Struct]:
    entry: Any = attach_entry()
    return msgspec.defstruct(
        "Attached", [("files", list[entry])], module=__name__, forbid_unknown_fields=True, frozen=True
    )
