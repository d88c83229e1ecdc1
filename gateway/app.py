"""`create_app()`: the gateway's Starlette application (SPEC §10).

    GET  /health              no auth
    GET  /openapi.json        no auth
    POST /pair                one-time code (X-Pairing-Code) → paired token
    GET  /api/status          bearer, grant of `status`
    GET  /api/config          bearer, grant of `config/get`
    PUT  /api/config/{prop}   bearer, grant of `config/set`, via `services.config_store`
    GET  /rpc                 WebSocket JSON-RPC (the same dispatcher as the local socket)

The app holds no state of its own beyond the pairing codes: everything else is the daemon's services, read
at request time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Route, WebSocketRoute

from app.auth.pairing_codes import PairingCodes
from gateway.errors import ApiError, handle_api_error, handle_http_exception
from gateway.middleware import BODY_LIMIT, BodyLimit, CatchAll, HostAllowlist, SecurityHeaders
from gateway.rest import RestApi
from gateway.ws import rpc_endpoint
from rpc.dispatcher import Registry
from rpc.server import RpcServer

__all__ = ["DEFAULT_ALLOWED_HOSTS", "allowed_hosts", "create_app"]

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "::1")
_WILDCARD_BINDS = ("", "0.0.0.0", "::")  # noqa: S104  # names of "every interface", never a Host header


def allowed_hosts(bind_host: str, configured: Iterable[str]) -> frozenset[str]:
    """Loopback names, the bind host (unless it is a wildcard) and `[gateway] allowed_hosts` (R-GW-6)."""
    names = {*DEFAULT_ALLOWED_HOSTS, *(h.strip().lower().strip("[]").rstrip(".") for h in configured)}
    bind = bind_host.strip().lower().strip("[]")
    if bind not in _WILDCARD_BINDS:
        names.add(bind)
    names.discard("")
    return frozenset(names)


def create_app(
    services: Any,
    rpc_server: RpcServer,
    registry: Registry,
    *,
    pairing_codes: PairingCodes | None = None,
    body_limit: int = BODY_LIMIT,
) -> Starlette:
    """The gateway app. `app.state.pairing_codes` is where the daemon issues pairing codes."""
    codes = pairing_codes if pairing_codes is not None else PairingCodes()
    api = RestApi(services, rpc_server, registry, codes)
    cache: list[Any] = [None, frozenset()]

    def hosts() -> frozenset[str]:
        config = services.config  # re-read: a config commit may swap it
        if cache[0] is not config:
            cache[0], cache[1] = config, allowed_hosts(config.gateway.host, config.gateway.allowed_hosts)
        result: frozenset[str] = cache[1]
        return result

    routes = [
        Route("/health", api.health, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/pair", api.pair, methods=["POST"]),
        Route("/api/status", api.status, methods=["GET"]),
        Route("/api/config", api.get_config, methods=["GET"]),
        Route("/api/config/{prop}", api.put_config, methods=["PUT"]),
        WebSocketRoute("/rpc", rpc_endpoint(rpc_server, services)),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(CatchAll),
            Middleware(HostAllowlist, allowed=hosts),
            Middleware(BodyLimit, max_bytes=body_limit),
        ],
        exception_handlers={ApiError: handle_api_error, HTTPException: handle_http_exception},
    )
    app.state.pairing_codes = codes
    return app
