"""HTTP errors of the gateway, as JSON `{"error": {"kind", "message", ...}}` (R-GW-6).

`kind` uses the JSON-RPC names of SPEC §3.1 where one fits (`auth_required`, `forbidden`, `invalid_params`,
`invalid_request`, `limit_exceeded`, `internal_error`); HTTP-only situations add `not_found` and
`method_not_allowed`. Routes raise: `ApiError` for HTTP-only situations, `RpcError` or a domain exception for the
rest. A route's work runs through `dispatcher.call`, whose error boundary maps and audits what it raises;
`domain_boundary` sends what a route raises outside it through the same boundary, and `rpc_error_handler` (the
app's one `RpcError` handler) renders it, so a REST route answers a failure exactly like its JSON-RPC twin.
Messages are fixed sentences: never a value, a token or exception text.

    status  kind                 when
    400     invalid_request      Host not allowed, malformed Content-Length, body not a JSON object
    400     invalid_params       a field fails validation (`errors` names the fields)
    401     auth_required        missing, malformed, unknown or revoked bearer token
    403     forbidden            missing grant (`grant`), config path (`prop`), wrong pairing code, bad Origin
    404     not_found            no such route
    405     method_not_allowed   the route exists with another method
    409     session_busy         (and the other domain errors: see `from_rpc_error`)
    413     limit_exceeded       body over 64 KiB (`name: "body"`, `limit`)
    429     limit_exceeded       pairing lockout (`name: "pairing_attempts"`, `retryAfter`, header Retry-After)
    500     internal_error       unexpected failure (`error_id`; the traceback is in the daemon log only)
    503     storage_unavailable  the database refused a write or cannot be reached (`reason`, `error_id`; R-STORE-3)
    503     resources_exhausted  the daemon is out of file descriptors (`reason`, `error_id`)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from rpc.core.errors import RpcError

if TYPE_CHECKING:
    from rpc.core.dispatcher import Dispatcher

Endpoint = Callable[[Request], Awaitable[Response]]

__all__ = [
    "ApiError",
    "Endpoint",
    "domain_boundary",
    "error_body",
    "error_response",
    "from_rpc_error",
    "handle_api_error",
    "handle_http_exception",
    "json_response",
    "mapped",
    "rpc_error_handler",
]

_HTTP_KINDS = {404: "not_found", 405: "method_not_allowed"}
_UNAVAILABLE_KINDS = frozenset({"storage_unavailable", "resources_exhausted"})  # conditions of the moment: 503

# JSON-RPC code -> HTTP status, so a REST route answers a domain error exactly like its RPC twin
# (same kind, same data), only with a status line.
_STATUS_OF_CODE = {
    -32700: 400,
    -32600: 400,
    -32601: 404,
    -32602: 400,
    -32603: 500,
    -32000: 404,
    -32001: 429,
    -32002: 409,
    -32003: 403,
    -32004: 404,
    -32005: 429,
    -32010: 401,
    -32011: 400,
    -32012: 403,
}


class ApiError(Exception):
    """Raised by a route; rendered by `handle_api_error`. `extra` goes into the error object as is."""

    def __init__(
        self, status: int, kind: str, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})
        self.extra = extra


T = TypeVar("T")


def from_rpc_error(exc: RpcError) -> ApiError:
    """The HTTP form of a protocol error: `kind` and the rest of `data` go into the error object."""
    data = dict(exc.data)
    kind = str(data.pop("kind", exc.kind))
    status = 503 if kind in _UNAVAILABLE_KINDS else _STATUS_OF_CODE.get(exc.code, 500)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return ApiError(status, kind, exc.message, headers=headers, **data)


def domain_boundary(
    dispatcher: Dispatcher, passthrough: tuple[type[BaseException], ...] = ()
) -> Callable[[Endpoint], Endpoint]:
    """Wrap a bearer route: once it knows its caller (`request.state.caller`, set by `gateway.auth.caller_context`),
    any exception it raises outside `dispatcher.call` is a domain failure, answered through the dispatcher's error
    boundary (mapped, audited when a refusal; unknown ones become `internal_error` with an error_id, the traceback
    logged there), as a JSON-RPC handler's would be. Before that, and for `ApiError`, `HTTPException`, `RpcError`
    (already answered), a client that went away or `passthrough` (the body limit's signal), the exception goes on
    unchanged."""
    skip: tuple[type[BaseException], ...] = (ApiError, HTTPException, RpcError, ClientDisconnect, *passthrough)

    def wrap(endpoint: Endpoint) -> Endpoint:
        async def route(request: Request) -> Response:
            try:
                return await endpoint(request)
            except skip:
                raise
            except Exception as exc:
                caller = getattr(request.state, "caller", None)
                if caller is None:
                    raise
                raise dispatcher.errors.answer(exc, caller.peer.label, caller.authority.principal_id) from None

        return route

    return wrap


async def mapped(dispatcher: Dispatcher, step: Awaitable[T]) -> T:
    """Await a domain step of a route that has no bearer caller (`/pair`, once its code was redeemed): a failure
    is mapped as `domain_boundary` maps one, so a database that cannot be written answers 503, not 500."""
    try:
        return await step
    except (ApiError, HTTPException, RpcError):
        raise
    except Exception as exc:
        raise dispatcher.errors.to_rpc_error(exc) from None


async def rpc_error_handler(request: Request, exc: Exception) -> Response:
    """The app's handler of `RpcError`: its HTTP form (`from_rpc_error`). It was audited where it was answered, by
    the dispatcher's error boundary (R-SEC-3)."""
    assert isinstance(exc, RpcError)
    return await handle_api_error(request, from_rpc_error(exc))


def json_response(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, headers=headers, media_type="application/json")


def error_body(kind: str, message: str, **extra: Any) -> bytes:
    return orjson.dumps({"error": {"kind": kind, "message": message, **extra}})


def error_response(
    status: int, kind: str, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
) -> Response:
    return Response(
        error_body(kind, message, **extra), status_code=status, headers=headers, media_type="application/json"
    )


async def handle_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.kind, exc.message, headers=exc.headers, **exc.extra)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 (and any HTTPException) in our JSON shape, without its detail text."""
    assert isinstance(exc, HTTPException)
    kind = _HTTP_KINDS.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error")
    message = {404: "Not found", 405: "Method not allowed"}.get(exc.status_code, "Request failed")
    return error_response(exc.status_code, kind, message, headers=exc.headers)
