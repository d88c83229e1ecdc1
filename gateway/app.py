"""`create_app()`: the gateway's Starlette application (SPEC §10).

    GET  /health              no auth
    GET  /openapi.json        no auth
    GET  /openrpc.json        no auth: the JSON-RPC surface's OpenRPC document, as `rpc.discover` answers it
    POST /pair                one-time code (X-Pairing-Code) → paired token
    GET  /api/status          bearer, grant of `status`
    GET  /metrics             bearer, grant of `system/metrics` (system:read): the Prometheus text format
    GET  /api/config          bearer, grant of `config/get`
    PUT  /api/config/{prop}   bearer, grant of `config/set`, via `services.config_store`
    GET  /api/sessions[/{id}/messages|usage], POST /api/sessions/{id}/prompt   bearer, grants of `session/*`
    PATCH /api/sessions/{id}, GET /api/models                                  bearer, session/configure, models/list
    POST /webhook/{agent}     bearer, grant of `session/prompt` + the agent right: a turn on a chat session
    GET  /api/sessions/{id}/events   bearer (or ?token=), session/attach: the session's updates as SSE (R-ECO-2)
    GET  /v1/models, POST /v1/chat/completions   bearer: the OpenAI-compatible endpoint (gateway/rest/openai_api.py)
    GET  /rpc                 WebSocket JSON-RPC (the same dispatcher as the local socket)
    GET  /acp                 WebSocket Agent Client Protocol (gateway/acp_ws.py, docs/acp.md)
    GET  /, /static/*         the web control panel, static files from `web/` (R-GW-5, docs/panel.md)

The app holds no state of its own beyond the pairing codes: everything else is the daemon's services, read
at request time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from app.auth.pairing_codes import PairingCodes
from app.sessions.lifecycle.http_turns import HttpTurns
from gateway.acp_ws import acp_endpoint, acp_without_upgrade
from gateway.errors import (
    ApiError,
    domain_boundary,
    handle_api_error,
    handle_http_exception,
    rpc_error_handler,
)
from gateway.middleware import BODY_LIMIT, BodyLimit, BodyTooLarge, CatchAll, HostAllowlist, SecurityHeaders
from gateway.openapi.document import openapi_endpoint
from gateway.rest.config import ConfigApi
from gateway.rest.events import EventsApi
from gateway.rest.openai_api import OpenAiApi
from gateway.rest.pairing import PairingApi
from gateway.rest.public import PublicApi
from gateway.rest.sessions import SessionApi
from gateway.rest.system import SystemApi
from gateway.rest.webhook import WebhookApi
from gateway.ws import rpc_endpoint, rpc_without_upgrade
from rpc.core.dispatcher import Dispatcher
from rpc.core.errors import RpcError

if TYPE_CHECKING:
    from app.config.schema import Config

__all__ = ["DEFAULT_ALLOWED_HOSTS", "PANEL_CSP", "allowed_hosts", "create_app", "panel_routes", "web_dir"]

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


# The panel's page may load only its own files and talk only to its own origin (`connect-src 'self'`
# covers the same-origin ws:/wss: URL of /rpc); no inline script or style, no framing.
PANEL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def web_dir() -> Path | None:
    """The panel's static files: `web/` of a source tree, else `<sys.prefix>/share/zeroclaw/web` (the image)."""
    for candidate in (Path(__file__).resolve().parents[1] / "web", Path(sys.prefix) / "share" / "zeroclaw" / "web"):
        if (candidate / "index.html").is_file():
            return candidate
    return None


def panel_routes(directory: Path | None = None) -> list[BaseRoute]:
    """`GET /` (index.html with a strict CSP) and `GET /static/<file>` (everything in `web/`, served as is)."""
    root = directory if directory is not None else web_dir()

    async def index(request: Request) -> Response:
        if root is None:
            raise ApiError(404, "not_found", "The web panel is not installed")
        headers = {
            "Content-Security-Policy": PANEL_CSP,
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        }
        return FileResponse(root / "index.html", media_type="text/html; charset=utf-8", headers=headers)

    routes: list[BaseRoute] = [Route("/", index, methods=["GET"])]
    if root is not None:
        routes.append(Mount("/static", app=StaticFiles(directory=root), name="panel"))
    return routes


def create_app(
    dispatcher: Dispatcher,
    *,
    pairing_codes: PairingCodes | None = None,
    body_limit: int = BODY_LIMIT,
) -> Starlette:
    """The gateway app. `app.state.pairing_codes` is where the daemon issues pairing codes."""
    codes = pairing_codes if pairing_codes is not None else PairingCodes()
    services = dispatcher.services
    public_api = PublicApi(dispatcher)
    pairing_api = PairingApi(dispatcher, codes)
    system_api = SystemApi(dispatcher)
    config_api = ConfigApi(dispatcher)
    turns = HttpTurns(services.sessions)
    session_api = SessionApi(dispatcher, turns)
    webhook_api = WebhookApi(dispatcher, turns)
    openai_api = OpenAiApi(dispatcher, turns)
    events_api = EventsApi(dispatcher)
    cache: tuple[Config | None, frozenset[str]] = (None, frozenset())

    def hosts() -> frozenset[str]:
        nonlocal cache
        config = services.config  # re-read: a config commit may swap it
        if cache[0] is not config:
            cache = (config, allowed_hosts(config.gateway.host, config.gateway.allowed_hosts))
        return cache[1]

    # What a bearer route raises outside `dispatcher.call` meets the dispatcher's error boundary too.
    bearer = domain_boundary(dispatcher, passthrough=(BodyTooLarge,))
    routes = [
        Route("/health", public_api.health, methods=["GET"]),
        Route("/openapi.json", openapi_endpoint(services.version), methods=["GET"]),
        Route("/openrpc.json", public_api.openrpc, methods=["GET"]),
        Route("/pair", pairing_api.pair, methods=["POST"]),
        Route("/api/status", bearer(system_api.status), methods=["GET"]),
        Route("/metrics", bearer(system_api.metrics), methods=["GET"]),
        Route("/api/config", bearer(config_api.get_config), methods=["GET"]),
        Route("/api/config/{prop}", bearer(config_api.put_config), methods=["PUT"]),
        Route("/api/sessions", bearer(session_api.list_sessions), methods=["GET"]),
        Route("/api/sessions/{id}/messages", bearer(session_api.messages), methods=["GET"]),
        Route("/api/sessions/{id}/usage", bearer(session_api.usage), methods=["GET"]),
        Route("/api/sessions/{id}/prompt", bearer(session_api.prompt), methods=["POST"]),
        Route("/api/sessions/{id}", bearer(session_api.configure), methods=["PATCH"]),
        Route("/api/sessions/{id}/fork", bearer(session_api.fork), methods=["POST"]),
        Route("/api/sessions/{id}/rollback", bearer(session_api.rollback), methods=["POST"]),
        Route("/api/sessions/{id}/steer", bearer(session_api.steer), methods=["POST"]),
        Route("/api/models", bearer(session_api.models), methods=["GET"]),
        Route("/webhook/{agent}", bearer(webhook_api.webhook), methods=["POST"]),
        Route("/api/sessions/{id}/events", bearer(events_api.events), methods=["GET"]),  # SSE (R-ECO-2)
        Route("/v1/models", bearer(openai_api.models), methods=["GET"]),  # OpenAI-compatible (R-ECO-1)
        Route("/v1/chat/completions", bearer(openai_api.chat_completions), methods=["POST"]),
        WebSocketRoute("/rpc", rpc_endpoint(dispatcher)),
        Route("/rpc", rpc_without_upgrade, methods=["GET"]),  # plain HTTP: 426 (other methods 405)
        WebSocketRoute("/acp", acp_endpoint(dispatcher)),  # the Agent Client Protocol (gateway/acp_ws.py)
        Route("/acp", acp_without_upgrade, methods=["GET"]),
        *panel_routes(),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(CatchAll),
            Middleware(HostAllowlist, allowed=hosts),
            Middleware(BodyLimit, max_bytes=body_limit),
        ],
        exception_handlers={
            ApiError: handle_api_error,
            RpcError: rpc_error_handler,
            HTTPException: handle_http_exception,
        },
    )
    app.state.pairing_codes = codes
    return app
