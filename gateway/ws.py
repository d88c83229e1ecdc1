"""`GET /rpc`: the JSON-RPC WebSocket endpoint (R-GW-4, R-GW-6).

The Origin check runs before accept: a browser page from another site must not drive the daemon with the
user's network position (absent Origin = a non-browser client, allowed). The rest is the transport's job.
A plain HTTP request to `/rpc` (no upgrade) gets 426 Upgrade Required; another method gets 405.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from gateway.errors import ApiError, error_body
from gateway.middleware import deny_websocket, split_host
from gateway.server import ABORT_EXTENSION
from rpc.core.dispatcher import Dispatcher
from rpc.transports.websocket import WebSocketTransport, websocket_peer

__all__ = ["origin_allowed", "rpc_endpoint", "rpc_without_upgrade"]

_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def origin_allowed(origin: str | None, host: str | None, scheme: str) -> bool:
    """Absent Origin, or one naming the same host and port as the Host header."""
    if origin is None:
        return True
    if host is None:
        return False
    try:
        parsed = urlsplit(origin.strip())
        origin_port = parsed.port or _DEFAULT_PORTS.get(parsed.scheme)
    except ValueError:
        return False
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return False  # includes the opaque origin "null"
    name, port = split_host(host)
    port = port or _DEFAULT_PORTS.get(scheme)
    return parsed.hostname.lower().rstrip(".") == name and origin_port == port


def rpc_endpoint(dispatcher: Dispatcher) -> Callable[[WebSocket], Awaitable[None]]:
    async def endpoint(websocket: WebSocket) -> None:
        headers = websocket.headers
        peer = websocket_peer(
            (websocket.client.host, websocket.client.port) if websocket.client else None,
            headers.get("authorization"),
        )
        if not origin_allowed(headers.get("origin"), headers.get("host"), websocket.url.scheme):
            dispatcher.audit.record("denied", peer.label, None)
            await deny_websocket(websocket.scope, websocket.send, 403, error_body("forbidden", "Origin not allowed"))
            return
        await websocket.accept()
        abort = websocket.scope.get("extensions", {}).get(ABORT_EXTENSION)
        await WebSocketTransport(websocket, dispatcher, peer, abort_connection=abort).run()

    return endpoint


async def rpc_without_upgrade(request: Request) -> Response:
    """`GET /rpc` as plain HTTP: the endpoint exists but speaks only WebSocket (RFC 9110 §15.5.22)."""
    message = "/rpc is a WebSocket endpoint: send an upgrade request"
    raise ApiError(426, "invalid_request", message, headers={"Upgrade": "websocket"})
