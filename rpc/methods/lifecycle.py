"""`initialize` and `status` (R-INIT, SPEC §7.1)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import orjson
from pydantic import Field, Strict

from app.paths import process_uid
from rpc.dispatcher import Call, NoParams, Params, Registry
from rpc.errors import AuthRequired, VersionMismatch

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["PROTOCOL_VERSION", "register"]

PROTOCOL_VERSION = 1


class ClientInfo(Params):
    name: str | None = None
    version: str | None = None


class InitializeParams(Params):
    protocol_version: Annotated[int, Strict()] = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    client_capabilities: dict[str, Any] | None = None
    auth_token: Annotated[str | None, Field(max_length=512)] = None


def register(registry: Registry) -> None:
    registry.method("initialize", params=InitializeParams, grant=None, requires_init=False, barrier=True)(initialize)
    registry.method("status", params=NoParams, grant="system:read")(StatusAnswer().answer)


async def initialize(call: Call, params: InitializeParams) -> dict[str, Any]:
    conn = call.connection
    services = call.services
    if params.protocol_version != PROTOCOL_VERSION:
        conn.deauthenticate()
        services.audit.record("denied", conn.peer.label, None)  # a refused initialize (R-SEC-3)
        raise VersionMismatch(supported=[PROTOCOL_VERSION], requested=params.protocol_version)
    token = params.auth_token if params.auth_token is not None else conn.peer.bearer_token
    if token is not None:
        resolved = await services.auth.token(token)
    elif conn.peer.remote:
        resolved = None  # a WebSocket peer always needs a token (R-AUTH-3)
    else:
        # Where the OS does not say who connected, only the owner (or root) can reach a 0600 socket; on Windows,
        # only the owner (or SYSTEM) can open the pipe (R-SEC-4).
        resolved = services.auth.local(conn.peer.uid if conn.peer.uid is not None else process_uid())
    if resolved is None:
        conn.deauthenticate()  # a failed re-initialize must not leave the old principal in place
        raise AuthRequired("Authentication failed")  # audited as `denied` when answered
    credential, principal = resolved
    conn.authenticated(credential, principal)
    conn.client_capabilities = params.client_capabilities or {}
    services.audit.record("initialize", conn.peer.label, principal.id)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverVersion": services.version,
        "serverPid": os.getpid(),
        "principal": {"id": principal.id, "admin": principal.admin},
        "methods": conn.server.registry.names(),
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

    def answer(self, call: Call, params: NoParams) -> orjson.Fragment:
        server = call.connection.server
        services = server.services
        live = services.sessions.live
        clock = services.clock  # an attribute holding a function: called through a local, the lookup is cheaper
        now = clock()
        if (
            now >= self._expires_ns
            or len(server.connections) != self._connections
            or len(live) != len(self._session_ids)
            or (live and live.keys() != self._session_ids)
            or services.gateway_url is not self._gateway_url
            or services is not self._services
        ):
            self._rebuild(services, len(server.connections), now)
        return self._value

    def _rebuild(self, services: Services, connections: int, now: int) -> None:
        uptime_ms = services.uptime_ms(now)
        self._expires_ns = services.started_ns + (uptime_ms + 1) * 1_000_000
        self._services, self._connections, self._gateway_url = services, connections, services.gateway_url
        self._session_ids = frozenset(services.sessions.live)
        status: dict[str, Any] = services.describe(now)
        status["protocolVersion"] = PROTOCOL_VERSION
        status["connections"] = connections
        self._value = orjson.Fragment(orjson.dumps(status))
