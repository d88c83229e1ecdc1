"""`initialize`, `status` and `system/metrics` (R-INIT, SPEC §7.1; the metrics: rpc/methods/metrics.py).

`initialize` checks the protocol version and authenticates the caller, then hands over to the dialect the caller
speaks (`rpc.core.dialect`): the listener's, or the one its params ask for, else the standard one. The dialect
reads its own fields, signs the caller in and answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import msgspec
import orjson

from app.services import DaemonStatus, GatewayInfo
from rpc.core.answers import Answer, nested_model, wire_model
from rpc.core.context import CallContext
from rpc.core.dialect import PROTOCOL_VERSION, SignedIn
from rpc.core.errors import VersionMismatch
from rpc.core.registry import Contract, NoParams, Params, Registry
from rpc.core.wire import to_wire
from rpc.methods.authenticate import authenticate
from rpc.methods.metrics import MetricsAnswer

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["PROTOCOL_VERSION", "STATUS_PROTOCOL_FIELDS", "InitializeParams", "Status", "register"]


class ClientInfo(Params, frozen=True):
    name: str | None = None
    version: str | None = None


class InitializeParams(Params, frozen=True):
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    client_capabilities: dict[str, Any] | None = None
    auth_token: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    # The params as sent (`derive`, never a key of that name): the dialect they ask for reads its own fields there.
    sent: dict[str, Any] = {}

    derived_fields: ClassVar[frozenset[str]] = frozenset({"sent"})

    @classmethod
    def derive(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        return {"sent": raw}

    def __repr__(self) -> str:
        # What the client sent (a token, a terminal's environment) stays out of logs and tracebacks.
        return f"InitializeParams(protocol_version={self.protocol_version!r}, ...)"


class PrincipalInfo(Answer, frozen=True):
    id: str
    admin: bool


class Initialized(Answer, frozen=True):  # the standard dialect's answer; another dialect answers its own way
    protocol_version: int
    server_version: str
    server_pid: int
    principal: PrincipalInfo
    methods: list[str]


GatewayInfoModel = nested_model(GatewayInfo)
# The keys the protocol layer adds after `describe()`'s (`StatusAnswer`).
STATUS_PROTOCOL_FIELDS: tuple[tuple[str, Any], ...] = (("protocol_version", int), ("connections", int))
Status = wire_model(
    DaemonStatus,
    name="Status",
    doc="`services.describe()` plus what the protocol layer knows, as the `status` method answers.",
    extra=STATUS_PROTOCOL_FIELDS,
)


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    opened = c(
        "Open the conversation: protocol version, credential, capabilities",
        Initialized,
        ("auth_required", "version_mismatch"),
        storage=True,
    )
    method("initialize", params=InitializeParams, grant=None, requires_init=False, barrier=True, contract=opened)(
        initialize
    )
    status = c("The daemon's status", Status)
    method("status", params=NoParams, grant="system:read", contract=status)(StatusAnswer().answer)
    metrics = c("The daemon's metrics in the Prometheus text format 0.0.4", str)
    method("system/metrics", params=NoParams, grant="system:read", contract=metrics)(MetricsAnswer().answer)


async def initialize(ctx: CallContext, params: InitializeParams) -> Any:
    services, peer = ctx.services, ctx.peer
    dialect = ctx.daemon_view.dialect_for(peer, params.sent)
    hello = dialect.hello(params.sent)
    version = dialect.protocol_version
    if version is not None and params.protocol_version != version:
        ctx.sign_out()
        services.audit.record("denied", peer.label, None)  # a refused initialize (R-SEC-3)
        raise VersionMismatch(supported=[version], requested=params.protocol_version)
    try:
        credential, principal = await authenticate(ctx, params)
    except Exception as exc:
        refusal = dialect.error(exc)
        if refusal is exc:
            raise
        raise refusal from None
    answer = dialect.welcome(ctx, SignedIn(credential, principal, params, hello))
    services.audit.record("initialize", peer.label, principal.id)
    return answer


class StatusAnswer:
    """The `status` handler (`answer`). Monitoring tools poll it hard, and every answer within the same
    millisecond (same uptime at `uptimeSecs` resolution, same connection count, same live sessions, same gateway)
    is identical, so it is built and encoded once and reused (an `orjson.Fragment` is embedded in the response
    as it is). What the cached answer shows is kept field by field: checking costs a few comparisons. The one
    cache of `status` is this one, not the domain's: the answer mixes in what only the protocol layer knows (the
    connection count), and what is worth keeping is the encoded frame, a wire concern."""

    __slots__ = ("_connections", "_expires_ns", "_gateway_url", "_services", "_session_ids", "_value")

    def __init__(self) -> None:
        self._services: object = None
        self._expires_ns = 0  # the clock reading at which `uptimeSecs` moves on to the next millisecond
        self._connections = -1
        self._session_ids: frozenset[str] = frozenset()
        self._gateway_url: str | None = None
        self._value = orjson.Fragment(b"{}")

    def answer(self, ctx: CallContext, params: NoParams) -> orjson.Fragment:
        services = ctx.services
        connections = ctx.daemon_view.connection_count
        live = services.sessions.live
        clock = services.clock  # an attribute holding a function: called through a local, the lookup is cheaper
        now = clock()
        if (
            now >= self._expires_ns
            or connections != self._connections
            or len(live) != len(self._session_ids)
            or (live and live.keys() != self._session_ids)
            or services.gateway_url is not self._gateway_url
            or services is not self._services
        ):
            self._rebuild(services, connections, now)
        return self._value

    def _rebuild(self, services: Services, connections: int, now: int) -> None:
        uptime_ms = services.uptime_ms(now)
        self._expires_ns = services.started_ns + (uptime_ms + 1) * 1_000_000
        self._services, self._connections, self._gateway_url = services, connections, services.gateway_url
        self._session_ids = frozenset(services.sessions.live)
        status: dict[str, Any] = to_wire(services.describe(now))
        status["protocolVersion"] = PROTOCOL_VERSION
        status["connections"] = connections
        self._value = orjson.Fragment(orjson.dumps(status))
