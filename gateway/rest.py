"""The REST routes (R-GW-2, R-GW-6, R-AUTH-4): health, pairing, status, metrics and config.

Each bearer route is an adapter over its JSON-RPC twin: authenticate the bearer, then `dispatcher.call` the twin
(its admission, params model, handler, error boundary and audit), and answer its result. Failures come back as the
`RpcError` the twin would have answered, rendered by the app's `RpcError` handler. The session routes and
`/webhook/{agent}` are in `gateway/rest_sessions.py` and `gateway/webhook.py`.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from msgspec import Meta
from starlette.requests import Request
from starlette.responses import Response

from app.auth.pairing_codes import PairingCodes, PairingLocked, PairingRejected
from app.storage import iso_z
from gateway.auth import caller_context, http_peer
from gateway.errors import ApiError, json_response, mapped
from gateway.openapi import openapi_spec
from rpc.contract.discover import encoded_document
from rpc.core.dispatcher import Dispatcher
from rpc.core.registry import Params, validate

__all__ = ["PairBody", "RestApi", "json_object"]

MAX_USER_CHARS = 128
MAX_LABEL_CHARS = 256


class PairBody(Params, frozen=True):
    """`POST /pair`'s optional body; unknown keys are ignored (the route reads only these two)."""

    user: (
        Annotated[str, Meta(min_length=1, max_length=MAX_USER_CHARS, description="must match the code's user if given")]
        | None
    ) = None
    label: Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)] | None = None


class RestApi:
    def __init__(self, dispatcher: Dispatcher, pairing_codes: PairingCodes) -> None:
        self.dispatcher = dispatcher
        self.services = dispatcher.services
        self.pairing_codes = pairing_codes
        self._openapi = orjson.dumps(openapi_spec(self.services.version))

    # -- no token --------------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def openapi(self, request: Request) -> Response:
        return Response(self._openapi, media_type="application/json")

    async def openrpc(self, request: Request) -> Response:
        # Built on the first ask (rpc.discover's or this route's), not with the gateway.
        return Response(encoded_document(self.dispatcher.registry, self.services), media_type="application/json")

    async def pair(self, request: Request) -> Response:
        """`X-Pairing-Code` + optional `{"user"?, "label"?}` → a paired token of the code's user (201)."""
        body = validate(PairBody, await json_object(request, optional=True))
        code = request.headers.get("x-pairing-code")
        if code is None:
            raise ApiError(400, "invalid_params", "The X-Pairing-Code header is required", errors=[_field("code")])
        peer = http_peer(request)
        try:
            binding = self.pairing_codes.redeem(code.strip(), body.user)
        except PairingLocked:
            retry = self.pairing_codes.retry_after()
            self.services.audit.record("denied", peer, None)
            raise ApiError(
                429,
                "limit_exceeded",
                "Too many failed pairing attempts; try again later",
                headers={"Retry-After": str(retry)},
                name="pairing_attempts",
                retryAfter=retry,
            ) from None
        except PairingRejected:
            self.services.audit.record("denied", peer, None)
            raise ApiError(403, "forbidden", "Wrong or expired pairing code") from None
        if self.services.auth.policy().for_user(binding.user) is None:
            self.services.audit.record("denied", peer, None)
            raise ApiError(403, "forbidden", "The user of this pairing code no longer exists")
        record, token = await mapped(
            self.dispatcher, self.services.pairing.create(binding.user, body.label or binding.label)
        )
        result = {
            "tokenId": record.token_id,
            "token": token,
            "user": record.user,
            "createdAt": iso_z(record.created_at),
        }
        return json_response(result, status=201)

    # -- bearer token: each route is its JSON-RPC twin through the dispatcher --------------------------

    async def status(self, request: Request) -> Response:
        context = await caller_context(request, self.dispatcher)
        return json_response(await self.dispatcher.call("status", None, context))

    async def metrics(self, request: Request) -> Response:
        """The Prometheus text format — `system/metrics` (grant system:read, docs/operations.md)."""
        from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4  # what every scraper reads

        context = await caller_context(request, self.dispatcher)
        text = await self.dispatcher.call("system/metrics", None, context)
        return Response(text.encode(), media_type=CONTENT_TYPE_PLAIN_0_0_4)

    async def get_config(self, request: Request) -> Response:
        """The whole config (secrets masked), or `{prop, value}` with `?prop=` — `config/get`."""
        context = await caller_context(request, self.dispatcher)
        prop = request.query_params.get("prop")
        return json_response(await self.dispatcher.call("config/get", {"prop": prop}, context))

    async def put_config(self, request: Request) -> Response:
        """`PUT /api/config/{prop}` with `{"value": …}` → `{prop, set: true}` — `config/set`."""
        context = await caller_context(request, self.dispatcher)
        body = await json_object(request)
        params = {"prop": request.path_params["prop"], **({"value": body["value"]} if "value" in body else {})}
        return json_response(await self.dispatcher.call("config/set", params, context))


def _field(name: str, type_: str = "missing", message: str = "required") -> dict[str, str]:
    return {"field": name, "type": type_, "message": message}


async def json_object(request: Request, *, optional: bool = False) -> dict[str, Any]:
    body = await request.body()  # BodyLimit stops this at 64 KiB
    if not body.strip() and optional:
        return {}
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ApiError(400, "invalid_request", "The body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_request", "The body must be a JSON object")
    return data
