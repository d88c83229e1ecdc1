"""Bearer authentication for the REST surface (R-GW-2, R-GW-6): every request resolves its token again, so a
revoked token or a changed policy applies at once. What the caller may do is not decided here: a route calls its
JSON-RPC twin through the dispatcher (`dispatcher.call`), which admits it by the grant the registry declares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

from app.auth.authenticator import Credential
from app.auth.policy import Principal
from gateway.errors import ApiError
from rpc.core.boundary import storage_unavailable
from rpc.core.context import CallContext
from rpc.core.dispatcher import Dispatcher
from rpc.transports.base import Peer
from rpc.transports.websocket import MAX_TOKEN_CHARS, bearer_token

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["Caller", "authenticate", "caller_context", "http_peer"]

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


async def authenticate(conn: HTTPConnection, services: Services, *, query_token: bool = False) -> Caller:
    """The caller of `Authorization: Bearer zc_…` (or, with `query_token`, of `?token=zc_…`: a browser's
    `EventSource` cannot send headers); 401 when missing, malformed, unknown or revoked."""
    peer = http_peer(conn)
    token = bearer_token(conn.headers.get("authorization"))
    if token is None and query_token:
        token = conn.query_params.get("token", "").strip()[: MAX_TOKEN_CHARS + 1] or None
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


async def caller_context(request: HTTPConnection, dispatcher: Dispatcher, *, query_token: bool = False) -> CallContext:
    """The call context of the bearer of this request (401 when there is none). From here on the route's failures
    are the caller's, audited as such (`request.state.caller`, `gateway.errors.domain_boundary`); its grant is
    checked where its JSON-RPC twin's is, by `dispatcher.call` (R-ARCH-3)."""
    caller = await authenticate(request, dispatcher.services, query_token=query_token)
    context = dispatcher.http_context(Peer(caller.peer), caller.credential, caller.principal)
    request.state.caller = context
    return context
