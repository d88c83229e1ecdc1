"""Bearer authentication for the REST surface (R-GW-2, R-GW-6): every request resolves its token again, so a
revoked token or a changed policy applies at once. Grants are read from the method registry, so a REST route
and its RPC method can never disagree: a route names the method it mirrors (`authorize(request, ..., "status")`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

from app.auth.authenticator import Credential
from app.auth.policy import Principal
from gateway.errors import ApiError
from rpc.dispatcher import Registry
from rpc.server import storage_unavailable
from rpc.transports.websocket import bearer_token

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["Caller", "authenticate", "authorize", "grant_of", "http_peer", "require_grant"]

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


@dataclass(frozen=True, slots=True)
class Caller:
    credential: Credential
    principal: Principal
    peer: str


def http_peer(conn: HTTPConnection) -> str:
    """Audit label of an HTTP caller: `http:<ip>:<port>`."""
    client = conn.client
    if client is None:
        return "http:unknown"
    host = f"[{client.host}]" if ":" in client.host else client.host
    return f"http:{host}:{client.port}"


def grant_of(registry: Registry, method: str) -> str:
    """The grant the RPC method `method` declares (a route mirroring a method that is not registered, or one that
    needs no grant, is a wiring error)."""
    spec = registry.get(method)
    if spec is None or spec.grant is None:
        raise LookupError(f"no grant for RPC method {method!r}")
    return spec.grant


async def authenticate(conn: HTTPConnection, services: Services) -> Caller:
    """The caller of `Authorization: Bearer zc_…`; 401 when missing, malformed, unknown or revoked."""
    peer = http_peer(conn)
    token = bearer_token(conn.headers.get("authorization"))
    if token is None:
        services.audit.record("denied", peer, None)  # as the RPC surface audits every -32010 (R-SEC-3)
        raise ApiError(401, "auth_required", "A bearer token is required", headers=_CHALLENGE)
    try:
        resolved = await services.auth.token(token)
    except Exception as exc:
        unavailable = storage_unavailable(exc)  # a token this daemon never resolved cannot be checked (R-STORE-3)
        if unavailable is None:
            raise
        raise unavailable from None
    if resolved is None:
        services.audit.record("denied", peer, None)
        raise ApiError(401, "auth_required", "The bearer token is not valid", headers=_CHALLENGE)
    credential, principal = resolved
    return Caller(credential, principal, peer)


def require_grant(caller: Caller, grant: str, services: Services) -> None:
    if not caller.principal.has_grant(grant):
        services.audit.record("denied", caller.peer, caller.principal.id)
        raise ApiError(403, "forbidden", f"Missing grant {grant}", grant=grant)


async def authorize(request: HTTPConnection, services: Services, registry: Registry, method: str) -> Caller:
    """The caller, holding the grant of the RPC method `method` the route mirrors (401, 403). From here on the
    route's failures are domain failures, audited as this caller (`request.state.caller`, `domain_boundary`)."""
    caller = await authenticate(request, services)
    request.state.caller = caller
    require_grant(caller, grant_of(registry, method), services)
    return caller
