"""`initialize`, `status` and `system/metrics` (R-INIT, SPEC §7.1; the metrics: rpc/metrics.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import msgspec
import orjson

from rpc.acp import speaks_acp
from rpc.context import CallContext, Terminal
from rpc.errors import VersionMismatch
from rpc.methods.authenticate import authenticate
from rpc.metrics import MetricsAnswer
from rpc.registry import NoParams, Params, Registry, whole
from rpc.wire import to_wire
from rpc.zerocode import PROTOCOL_VERSION as ZEROCLAW_PROTOCOL_VERSION
from rpc.zerocode import ZEROCODE, new_tui_id, speaks_zerocode

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["PROTOCOL_VERSION", "register"]

PROTOCOL_VERSION = 1


class ClientInfo(Params, frozen=True):
    name: str | None = None
    version: str | None = None


TerminalId = Annotated[str, whole(r"[A-Za-z0-9_-]{1,64}")]


class InitializeParams(Params, frozen=True):
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    client_capabilities: dict[str, Any] | None = None
    auth_token: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    # zerocode's (R-ZC-1, R-ZC-6): its environment, and the identity it had before a reconnect.
    env: dict[str, str] | None = None
    tui_id: TerminalId | None = None
    tui_sig: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    # Set from the frame's own spelling (`derive`), never from a key of that name.
    zerocode: bool = False
    acp: dict[str, Any] | None = None  # the `zeroclaw acp` bridge's marker (rpc/acp.py, R-EDIT-1)

    derived_fields: ClassVar[frozenset[str]] = frozenset({"zerocode", "acp"})

    @classmethod
    def derive(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        return {"zerocode": speaks_zerocode(raw), "acp": speaks_acp(raw)}

    def __repr__(self) -> str:
        # The environment and the token stay out of logs and tracebacks.
        return f"InitializeParams(protocol_version={self.protocol_version!r}, zerocode={self.zerocode!r}, ...)"


def register(registry: Registry) -> None:
    registry.method("initialize", params=InitializeParams, grant=None, requires_init=False, barrier=True)(initialize)
    registry.method("status", params=NoParams, grant="system:read")(StatusAnswer().answer)
    registry.method("system/metrics", params=NoParams, grant="system:read")(MetricsAnswer().answer)


async def initialize(ctx: CallContext, params: InitializeParams) -> dict[str, Any]:
    services = ctx.services
    peer = ctx.peer
    if params.acp is not None or peer.acp:  # R-EDIT-2: ACP negotiates its own version
        # Imported here: the ACP modules import this package's session handlers.
        from rpc.acp_initialize import initialize as acp_initialize

        return await acp_initialize(ctx, params, params.acp or {})
    if params.protocol_version != PROTOCOL_VERSION:
        ctx.sign_out()
        services.audit.record("denied", peer.label, None)  # a refused initialize (R-SEC-3)
        raise VersionMismatch(supported=[PROTOCOL_VERSION], requested=params.protocol_version)
    credential, principal = await authenticate(ctx, params)
    capabilities = params.client_capabilities or {}
    if params.zerocode or peer.zerocode:  # R-ZC-1, R-ZC-3, R-SVC-4: as ZeroClaw 0.8.4 (rt:dispatch.rs:909-920)
        terminal = Terminal(params.tui_id or new_tui_id(), params.env or {})
        ctx.sign_in(credential, principal, capabilities, dialect=ZEROCODE, terminal=terminal)
        services.audit.record("initialize", peer.label, principal.id)
        return {
            "protocol_version": ZEROCLAW_PROTOCOL_VERSION,
            "server_version": services.config.compat.zerocode_version,
            "tui_id": terminal.tui_id,
            "capabilities": ctx.daemon_view.method_names(),
        }
    ctx.sign_in(credential, principal, capabilities)
    services.audit.record("initialize", peer.label, principal.id)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverVersion": services.version,
        "serverPid": os.getpid(),
        "principal": {"id": principal.id, "admin": principal.admin},
        "methods": ctx.daemon_view.method_names(),
    }


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
