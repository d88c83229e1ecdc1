"""`GET /acp`: the Agent Client Protocol over WebSocket (R-EDIT-1), the daemon's one dispatcher behind it.

Every connection speaks the ACP dialect (`Peer.dialect`, rpc/dialects/acp/) from its `initialize` on. The bearer
token comes from `Authorization: Bearer`, else a `Sec-WebSocket-Protocol` entry `bearer.<token>` (what a browser can
send), else `?token=`; `initialize` checks it as on `/rpc`. `?agent=ALIAS` is the agent of the connection's new
sessions.
The subprotocol `zeroclaw.acp.v1` is echoed when offered (a `bearer.` entry never is). The Host guard is the
app's middleware; the Origin check is `/rpc`'s; pings are the server's (`ws_ping_interval`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from gateway.errors import ApiError, error_body
from gateway.middleware import deny_websocket
from gateway.server import ABORT_EXTENSION
from gateway.ws import origin_allowed
from rpc.core.dispatcher import Dispatcher
from rpc.dialects import DIALECTS
from rpc.transports.websocket import MAX_TOKEN_CHARS, WebSocketTransport, bearer_token, websocket_peer

__all__ = ["SUBPROTOCOL", "acp_endpoint", "acp_without_upgrade"]

SUBPROTOCOL = "zeroclaw.acp.v1"
_BEARER_PREFIX = "bearer."
MAX_AGENT_CHARS = 64


def offered_protocols(header: str | None) -> list[str]:
    return [entry.strip() for entry in (header or "").split(",") if entry.strip()]


def presented_token(authorization: str | None, offered: list[str], query_token: str | None) -> str | None:
    """The header's bearer token, else a `bearer.<token>` subprotocol entry, else `?token=`."""
    token = bearer_token(authorization)
    if token is not None:
        return token
    for entry in offered:
        if entry[: len(_BEARER_PREFIX)].lower() == _BEARER_PREFIX:
            token = entry[len(_BEARER_PREFIX) :]
            return token if 0 < len(token) <= MAX_TOKEN_CHARS else None
    if query_token is not None:
        token = query_token.strip()
        return token if 0 < len(token) <= MAX_TOKEN_CHARS else None
    return None


def acp_endpoint(dispatcher: Dispatcher) -> Callable[[WebSocket], Awaitable[None]]:
    async def endpoint(websocket: WebSocket) -> None:
        headers = websocket.headers
        offered = offered_protocols(headers.get("sec-websocket-protocol"))
        client = (websocket.client.host, websocket.client.port) if websocket.client else None
        peer = websocket_peer(client, None)
        if not origin_allowed(headers.get("origin"), headers.get("host"), websocket.url.scheme):
            dispatcher.audit.record("denied", peer.label, None)
            await deny_websocket(websocket.scope, websocket.send, 403, error_body("forbidden", "Origin not allowed"))
            return
        query = websocket.query_params
        agent = query.get("agent")
        token = presented_token(headers.get("authorization"), offered, query.get("token"))
        peer = dataclasses.replace(
            peer,
            bearer_token=token,
            dialect=DIALECTS["acp"],
            agent=agent if agent and len(agent) <= MAX_AGENT_CHARS else None,
        )
        await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        abort = websocket.scope.get("extensions", {}).get(ABORT_EXTENSION)
        await WebSocketTransport(websocket, dispatcher, peer, abort_connection=abort).run()

    return endpoint


async def acp_without_upgrade(request: Request) -> Response:
    """`GET /acp` as plain HTTP: 426, as `/rpc` answers."""
    raise ApiError(
        426,
        "invalid_request",
        "/acp is a WebSocket endpoint: send an upgrade request",
        headers={"Upgrade": "websocket"},
    )
