"""zerocode's remote mode (R-SVC-4): the `[wss]` listener, `zerocode --connect wss://HOST:PORT/?token=zc_…`.

A second uvicorn server of the gateway's own making (`gateway.server.start_gateway`) on its own port, TLS only,
serving one thing at every path: the JSON-RPC WebSocket transport of `/rpc`, with two differences.

* The peer's paired token is checked before the upgrade is accepted: zerocode 0.8.4 cannot send a header or an
  `initialize` field of its own, but the URL it is given is sent as is, query included (docs/zerocode.md,
  "Remote mode"). So `?token=zc_…` (or `Authorization: Bearer`, for other clients) is required, and a peer
  without a valid one (unknown, revoked, its user removed) gets 401 and never reaches the dispatcher. The token
  is resolved again by `initialize`, and a revocation reaches an open connection at its next call (R-AUTH-4).
* Every connection speaks the zerocode dialect (`Peer.dialect`): over WSS zerocode sends neither `env` nor
  `tui_id` on its first `initialize`, which R-ZC-1 reads as the standard dialect.

No Host allowlist: this port is meant to be reached by name from other machines, and a DNS-rebinding page could
not present a token anyway. A browser page's Origin is still refused (as on `/rpc`). The token is never logged:
uvicorn's access log (which would print the query) is off, and the audit log names the peer's address only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from gateway.errors import ApiError, error_body, handle_api_error
from gateway.middleware import CatchAll, SecurityHeaders, deny_websocket
from gateway.server import ABORT_EXTENSION, GatewayHandle, GatewayStartError, start_gateway
from gateway.ws import origin_allowed
from rpc.core.boundary import storage_unavailable
from rpc.core.dispatcher import Dispatcher
from rpc.dialects import DIALECTS
from rpc.transports.websocket import MAX_TOKEN_CHARS, WebSocketTransport, bearer_token, websocket_peer, ws_max_size

if TYPE_CHECKING:
    from app.config.schema import Wss

__all__ = ["TOKEN_PARAM", "create_remote_app", "presented_token", "remote_url", "start_remote_listener"]

TOKEN_PARAM = "token"  # noqa: S105  # the query key: wss://HOST:PORT/?token=zc_…
LISTENER_NAME = "[wss] listener"


def presented_token(query_token: str | None, authorization: str | None) -> str | None:
    """The URL's `?token=` (zerocode), else the upgrade's `Authorization: Bearer`; None when neither is usable."""
    if query_token is not None:
        token = query_token.strip()
        return token if token and len(token) <= MAX_TOKEN_CHARS else None
    return bearer_token(authorization)


def remote_endpoint(dispatcher: Dispatcher) -> Callable[[WebSocket], Awaitable[None]]:
    services = dispatcher.services

    async def endpoint(websocket: WebSocket) -> None:
        headers = websocket.headers
        client = (websocket.client.host, websocket.client.port) if websocket.client else None
        peer = websocket_peer(client, None)

        async def deny(status: int, kind: str, message: str) -> None:
            dispatcher.audit.record("denied", peer.label, None)
            await deny_websocket(websocket.scope, websocket.send, status, error_body(kind, message))

        if not origin_allowed(headers.get("origin"), headers.get("host"), websocket.url.scheme):
            await deny(403, "forbidden", "Origin not allowed")
            return
        token = presented_token(websocket.query_params.get(TOKEN_PARAM), headers.get("authorization"))
        if token is None:
            await deny(401, "auth_required", "A paired token is required: connect to wss://HOST:PORT/?token=…")
            return
        try:
            resolved = await services.auth.token(token)
        except Exception as exc:
            unavailable = storage_unavailable(exc)  # a token never resolved before cannot be checked (R-STORE-3)
            if unavailable is None:
                raise  # CatchAll: logged with an id, close 1011, nothing else to the peer
            await deny_websocket(
                websocket.scope, websocket.send, 503, error_body(unavailable.kind, unavailable.message)
            )
            return
        if resolved is None:
            await deny(401, "auth_required", "The token is not valid (unknown or revoked)")
            return
        await websocket.accept()
        abort = websocket.scope.get("extensions", {}).get(ABORT_EXTENSION)
        paired = dataclasses.replace(peer, bearer_token=token, dialect=DIALECTS["zerocode"])
        await WebSocketTransport(websocket, dispatcher, paired, abort_connection=abort).run()

    return endpoint


async def without_upgrade(request: Request) -> Response:
    raise ApiError(426, "invalid_request", "This port speaks WebSocket only", headers={"Upgrade": "websocket"})


def create_remote_app(dispatcher: Dispatcher) -> Starlette:
    """One WebSocket endpoint at every path (zerocode connects to `/`, a URL may name another)."""
    return Starlette(
        routes=[
            WebSocketRoute("/{path:path}", remote_endpoint(dispatcher)),
            Route("/{path:path}", without_upgrade, methods=["GET"]),
        ],
        middleware=[Middleware(SecurityHeaders), Middleware(CatchAll)],
        exception_handlers={ApiError: handle_api_error},
    )


async def start_remote_listener(dispatcher: Dispatcher, wss: Wss) -> GatewayHandle:
    """Serve `create_remote_app` on `[wss] host:port` with TLS; `GatewayStartError` (one line) when it cannot."""
    problem = wss.start_problem()
    if problem is not None or not wss.tls_cert or not wss.tls_key:
        raise GatewayStartError(problem or "[wss] is not enabled")
    return await start_gateway(
        create_remote_app(dispatcher),
        host=wss.host,
        port=wss.port,
        tls_cert=wss.tls_cert,
        tls_key=wss.tls_key,
        ws_max_size=ws_max_size(dispatcher.limits.max_frame_bytes),
        name=LISTENER_NAME,
    )


def remote_url(handle: GatewayHandle) -> str:
    """`wss://host:port`, what `zerocode --connect` is given (with `/?token=…`)."""
    return "wss" + handle.url.removeprefix("https")
