"""Pure-ASGI middleware of the gateway, outermost first (R-GW-6):

SecurityHeaders   `Server: zeroclaw` (no version), `X-Content-Type-Options`, `Cache-Control: no-store` on
                  /api and /pair (they carry tokens and config)
CatchAll          any unexpected exception → 500 `{"error":{"kind":"internal_error","error_id":…}}`, the
                  traceback to the daemon log only; never a stack trace in a response
HostAllowlist     DNS-rebinding guard: a Host header naming another host → 400 (HTTP and WebSocket)
BodyLimit         request bodies over the limit → 413, by Content-Length and by counting streamed bytes
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import error_body

__all__ = [
    "BODY_LIMIT",
    "BodyLimit",
    "BodyTooLarge",
    "CatchAll",
    "HostAllowlist",
    "SecurityHeaders",
    "deny_websocket",
    "host_name",
    "split_host",
]

log = logging.getLogger("zeroclaw.gateway")

BODY_LIMIT = 64 * 1024
_NO_STORE_PREFIXES = ("/api", "/pair", "/webhook")


async def _send_json(send: Send, status: int, body: bytes, websocket: bool = False) -> None:
    """A complete JSON response (as a WebSocket denial response when `websocket`)."""
    prefix = "websocket.http.response" if websocket else "http.response"
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": f"{prefix}.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.body", "body": body})


async def deny_websocket(scope: Scope, send: Send, status: int, body: bytes) -> None:
    """Refuse a WebSocket upgrade before accept: an HTTP response if the server supports it, else close 1008
    (which servers turn into 403)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        await _send_json(send, status, body, websocket=True)
    else:
        await send({"type": "websocket.close", "code": 1008})


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        no_store = str(scope.get("path", "")).startswith(_NO_STORE_PREFIXES)

        async def send_with_headers(message: Message) -> None:
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start", "websocket.accept"):
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"server"]
                headers.append((b"server", b"zeroclaw"))
                if kind != "websocket.accept":
                    headers.append((b"x-content-type-options", b"nosniff"))
                    if no_store:
                        headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class CatchAll:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] != "http.response.body":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            error_id = uuid.uuid4().hex[:16]
            log.error("unexpected gateway failure error_id=%s", error_id, exc_info=exc)
            if started:
                return  # the response is under way; the server will close the connection
            try:
                if scope["type"] == "http":
                    body = error_body("internal_error", "Internal error", error_id=error_id)
                    await _send_json(send, 500, body)
                else:
                    await send({"type": "websocket.close", "code": 1011})
            except Exception:
                log.debug("could not answer error_id=%s: the peer is gone", error_id)


def split_host(host: str) -> tuple[str, int | None]:
    """A Host header as (name, port): lower-case, without brackets or trailing dot; port None when absent."""
    host = host.strip().lower()
    port = ""
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return "", None
        name, rest = host[1:end], host[end + 1 :]
        port = rest[1:] if rest.startswith(":") else ""
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    else:
        name = host
    return name.rstrip("."), int(port) if port.isdigit() and len(port) <= 5 else None


def host_name(host: str) -> str:
    """The name in a Host header, lower-case, without port, brackets or trailing dot."""
    return split_host(host)[0]


class HostAllowlist:
    """`allowed()` returns the permitted host names (read per request, so a config change applies at once);
    `"*"` in it disables the check."""

    def __init__(self, app: ASGIApp, allowed: Callable[[], Iterable[str]]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = ""
        for key, value in scope.get("headers", []):
            if key == b"host":
                host = host_name(value.decode("latin-1"))
                break
        allowed = frozenset(self.allowed())
        if "*" in allowed or (host and host in allowed):
            await self.app(scope, receive, send)
            return
        log.info("refused a request for a host that is not allowed")  # never the header itself
        body = error_body("invalid_request", "Host not allowed")
        if scope["type"] == "http":
            await _send_json(send, 400, body)
        else:
            await deny_websocket(scope, send, 400, body)


class BodyTooLarge(Exception):
    """Raised into the app by a body read past the limit; `BodyLimit` answers 413 (routes let it through)."""


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = BODY_LIMIT) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                if not value.isdigit():
                    await _send_json(send, 400, error_body("invalid_request", "Malformed Content-Length"))
                    return
                if int(value) > self.max_bytes:
                    await self._too_large(send)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        body = error_body("limit_exceeded", "Request body too large", name="body", limit=self.max_bytes)
        await _send_json(send, 413, body)
