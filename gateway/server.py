"""Run the gateway on uvicorn inside the daemon's own event loop (R-GW-1).

We bind the listening socket ourselves (so port 0 yields the real port before anything is printed, and a busy
port fails here with a clear error), hand it to `uvicorn.Server.serve(sockets=[sock])` as a task on the
current loop, and return once uvicorn accepts connections. uvicorn never installs signal handlers: the daemon
owns SIGINT/SIGTERM and stops the gateway with `GatewayHandle.close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import os
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from app.gc_freeze import keep_what_lives_now

__all__ = ["ABORT_EXTENSION", "AppOnFirstRequest", "GatewayHandle", "GatewayStartError", "start_gateway"]

log = logging.getLogger("zeroclaw.gateway")

STARTUP_TIMEOUT = 10.0
ABORT_EXTENSION = "zeroclaw.transport.abort"  # a WebSocket scope's: drops the TCP connection without a close


class GatewayStartError(Exception):
    """A one-line reason the gateway cannot start (no secrets, no traceback)."""


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the daemon owns SIGINT/SIGTERM

    def install_signal_handlers(self) -> None:  # the name older uvicorn releases use
        return None


# Listening needs neither protocol: uvicorn calls these "classes" only for a connection it accepted
# or upgrades, and gets the real protocol, imported then (the cost: docs/gateway.md, Start-up).


class _HttpOnFirstConnection(asyncio.Protocol):
    """uvicorn's `http` protocol class, as `http="auto"` picks it (httptools if installed, else h11)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> asyncio.Protocol:  # type: ignore[misc]
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        return AutoHTTPProtocol(*args, **kwargs)


class _WebSocketsSansIOOnUpgrade(asyncio.Protocol):
    """uvicorn's `ws` protocol class, as `ws="websockets-sansio"` names it, able to abort its connection."""

    def __new__(cls, *args: Any, **kwargs: Any) -> asyncio.Protocol:  # type: ignore[misc]
        protocol: asyncio.Protocol = _abortable_websocket_protocol()(*args, **kwargs)
        return protocol


@functools.cache
def _abortable_websocket_protocol() -> type[Any]:
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    class AbortableWebSocketProtocol(WebSocketsSansIOProtocol):
        """Puts the connection's `abort` in the scope (`ABORT_EXTENSION`): a peer dropped for not reading is
        closed at once, where the ASGI close would wait on its unread data until `TCP_USER_TIMEOUT` (R-LIM)."""

        def handle_connect(self, event: Any) -> None:
            super().handle_connect(event)
            scope = getattr(self, "scope", None)
            if scope is not None:  # an upgrade that was refused has none
                scope["extensions"][ABORT_EXTENSION] = self.transport.abort

    return AbortableWebSocketProtocol


class AppOnFirstRequest:
    """The ASGI app uvicorn serves, built by the first request rather than at start-up (issue 15: Starlette and the
    gateway's modules are ~13 ms of a gateway start), as the database is opened by the first call that needs it.

    `module` is imported in a worker thread, so the event loop keeps answering meanwhile; then `build` makes the app.
    Requests that arrive before it is ready wait for that one build; every request goes through the whole app.
    """

    def __init__(self, module: str, build: Callable[[], ASGIApp]) -> None:
        self._module = module
        self._build = build
        self._app: ASGIApp | None = None
        self._loading: asyncio.Task[ASGIApp] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app if self._app is not None else await self._load()
        await app(scope, receive, send)

    async def _load(self) -> ASGIApp:
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._import_and_build())
        self._app = await asyncio.shield(self._loading)
        return self._app

    async def _import_and_build(self) -> ASGIApp:
        await asyncio.to_thread(importlib.import_module, self._module)
        app = self._build()
        keep_what_lives_now()  # the modules and the app live as long as the process
        return app


@dataclass
class GatewayHandle:
    host: str
    port: int
    tls: bool
    _server: uvicorn.Server = field(repr=False)
    _task: asyncio.Task[None] = field(repr=False)

    @property
    def url(self) -> str:
        """`http(s)://host:port` (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def ws_url(self) -> str:
        """`ws(s)://host:port/rpc`."""
        return "ws" + self.url.removeprefix("http") + "/rpc"

    async def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, close connections (WebSocket peers get close 1012), wait for them up to `timeout`."""
        if self._task.done():
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            log.warning("the gateway did not stop within %.0f s; cancelling it", timeout)
            self._server.force_exit = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        except Exception:
            log.exception("the gateway failed while stopping")


NOTSENT_LOWAT = 128 * 1024


async def _bind(host: str, port: int, backlog: int, user_timeout: float | None) -> socket.socket:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise GatewayStartError(f"cannot resolve gateway host {host!r}: {exc.strerror or exc}") from None
    family, type_, proto, _, addr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        _tune(sock, user_timeout)
        sock.bind(addr)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise GatewayStartError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _tune(sock: socket.socket, user_timeout: float | None) -> None:
    """The listener's TCP options, which the sockets it accepts inherit; on ours or on a passed one."""
    if user_timeout is not None and hasattr(socket, "TCP_USER_TIMEOUT"):
        # Inherited by accepted sockets (Linux): the kernel drops a peer that leaves data unacknowledged
        # that long (vanished, or its window shut), which ASGI cannot do (docs/gateway.md, Keepalive).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(user_timeout * 1000))
    if hasattr(socket, "TCP_NOTSENT_LOWAT"):
        # Inherited too (Linux, macOS): little unsent output parks in the kernel, so a peer that stopped
        # reading backs up where the outbound limit and stall rule see it (docs/gateway.md, Outbound).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, NOTSENT_LOWAT)


def _inherited(sock: socket.socket, user_timeout: float | None) -> socket.socket:
    """A listening TCP socket a service manager passed (R-SVC-1): served as it is, with our options."""
    try:
        _tune(sock, user_timeout)
        sock.setblocking(False)
    except OSError as exc:
        raise GatewayStartError(f"the inherited gateway socket cannot be used: {exc.strerror or exc}") from None
    return sock


async def start_gateway(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    ws_max_size: int,
    backlog: int = 1024,
    shutdown_timeout: int = 3,
    ping_interval: float | None = 20.0,
    tcp_user_timeout: float | None = 60.0,
    name: str = "gateway",
    sock: socket.socket | None = None,
) -> GatewayHandle:
    """Serve `app` on host:port (0 = any free port), or on `sock`, a listening socket passed by a service
    manager (then host and port are its own), and return once it accepts requests.

    TLS when both `tls_cert` and `tls_key` are set (one without the other is an error). `ws_max_size` is the
    WebSocket message cap (`rpc.transports.websocket.ws_max_size(max_frame_bytes)`).

    Keepalive: the server pings every `ping_interval` but sets no pong deadline, because a connection whose
    reading is paused for backpressure (in-flight cap) cannot read pongs and must not be dropped for it; dead
    peers are found by `tcp_user_timeout` instead (Linux), as the pings leave data unacknowledged.

    `name` is the listener's name in errors and its task's (the `[wss]` listener runs here too, R-SVC-4).
    """
    if (tls_cert is None) != (tls_key is None):
        raise GatewayStartError("set both [gateway] tls_cert and tls_key, or neither")
    config = _uvicorn_config(
        app,
        host=host,
        port=port,
        tls_cert=tls_cert,
        tls_key=tls_key,
        ws_max_size=ws_max_size,
        backlog=backlog,
        shutdown_timeout=shutdown_timeout,
        ping_interval=ping_interval,
        name=name,
    )
    if sock is None:
        sock = await _bind(host, port, backlog, tcp_user_timeout)
    else:
        sock = _inherited(sock, tcp_user_timeout)
        host = ""  # the passed socket's own address is the one to name
    bound_host, bound_port = sock.getsockname()[:2]
    server = _EmbeddedServer(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name=f"zeroclaw-{name}")
    await _started(server, task, sock, name)
    return GatewayHandle(host or bound_host, bound_port, config.is_ssl, server, task)


def _uvicorn_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    tls_cert: str | None,
    tls_key: str | None,
    ws_max_size: int,
    backlog: int,
    shutdown_timeout: int,
    ping_interval: float | None,
    name: str,
) -> uvicorn.Config:
    """uvicorn's settings for the embedded gateway, loaded (TLS files read) so a bad one fails here."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=_HttpOnFirstConnection,  # http="auto", imported by the first connection
        lifespan="off",
        log_level="warning",
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,  # the audit log names the real peer, not a forwarded one
        ws=_WebSocketsSansIOOnUpgrade,  # ws="websockets-sansio", imported by the first upgrade
        ws_max_size=ws_max_size,
        ws_ping_interval=ping_interval,
        ws_ping_timeout=None,
        ws_per_message_deflate=False,  # declined: no secret compressed next to a peer's text (docs/gateway.md)
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
        backlog=backlog,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    try:
        config.load()  # TLS files are read here: fail now, with a clear message
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise GatewayStartError(f"cannot load the {name} TLS certificate or key: {reason}") from None
    return config


async def _started(server: uvicorn.Server, task: asyncio.Task[None], sock: socket.socket, name: str) -> None:
    """Return once `server` accepts connections; stop it and raise if it ends or takes over STARTUP_TIMEOUT."""
    deadline = asyncio.get_running_loop().time() + STARTUP_TIMEOUT
    while not server.started:
        if task.done() or asyncio.get_running_loop().time() > deadline:
            server.should_exit = True
            failure = task.exception() if task.done() and not task.cancelled() else None
            if not task.done():
                task.cancel()
            sock.close()
            reason = type(failure).__name__ if failure is not None else "timeout"
            raise GatewayStartError(f"the {name} did not start: {reason}")
        await asyncio.sleep(0.001)  # uvicorn sets `started` within a few ms; every ms here delays readiness
