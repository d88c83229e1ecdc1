"""The REST routes (R-GW-2, R-GW-6, R-AUTH-4): health, pairing, status and config.

Each route is a thin adapter like an RPC handler: authenticate, check the grant its RPC twin declares, call
one domain service, shape the result. A domain failure is raised as is: `gateway.errors.domain_boundary` and the
app's `RpcError` handler answer it as its RPC twin would. The session routes and `/webhook/{agent}` come with the
session service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from app.auth import policy
from app.auth.pairing_codes import PairingCodes, PairingLocked, PairingRejected
from app.config.props import MAX_PROP_CHARS
from app.storage import iso_z
from gateway.auth import authorize, grant_of, http_peer
from gateway.errors import ApiError, json_response, mapped
from gateway.openapi import openapi_spec
from rpc.dispatcher import Registry
from rpc.methods.lifecycle import PROTOCOL_VERSION
from rpc.server import RpcServer

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["MAX_LABEL_CHARS", "RestApi"]

MAX_LABEL_CHARS = 256


class RestApi:
    def __init__(
        self, services: Services, rpc_server: RpcServer, registry: Registry, pairing_codes: PairingCodes
    ) -> None:
        self.services = services
        self.rpc_server = rpc_server
        self.registry = registry
        self.pairing_codes = pairing_codes
        self._openapi = orjson.dumps(openapi_spec(services.version))

    # -- no token --------------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def openapi(self, request: Request) -> Response:
        return Response(self._openapi, media_type="application/json")

    async def pair(self, request: Request) -> Response:
        """`X-Pairing-Code` + optional `{"user"?, "label"?}` → a paired token of the code's user (201)."""
        body = await _json_object(request, optional=True)
        user = _optional_str(body, "user", 128)
        label = _optional_str(body, "label", MAX_LABEL_CHARS)
        code = request.headers.get("x-pairing-code")
        if code is None:
            raise ApiError(400, "invalid_params", "The X-Pairing-Code header is required", errors=[_field("code")])
        peer = http_peer(request)
        try:
            binding = self.pairing_codes.redeem(code.strip(), user)
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
            self.rpc_server, self.services.pairing.create(binding.user, label or binding.label)
        )
        result = {
            "tokenId": record.token_id,
            "token": token,
            "user": record.user,
            "createdAt": iso_z(record.created_at),
        }
        return json_response(result, status=201)

    # -- bearer token ----------------------------------------------------------------------------------

    async def status(self, request: Request) -> Response:
        await authorize(request, self.services, self.registry, "status")
        return json_response(
            {
                **self.services.describe(),
                "protocolVersion": PROTOCOL_VERSION,
                "connections": len(self.rpc_server.connections),
            }
        )

    async def get_config(self, request: Request) -> Response:
        """The whole config (secrets masked), or `{prop, value}` with `?prop=` — like `config/get`."""
        await authorize(request, self.services, self.registry, "config/get")
        prop = request.query_params.get("prop")
        if prop is not None and not 0 < len(prop) <= MAX_PROP_CHARS:
            raise ApiError(400, "invalid_params", "Invalid params", errors=[_field("prop", "string_too_long")])
        value = self.services.config_store.get(prop)
        return json_response(value if prop is None else {"prop": prop, "value": value})

    async def put_config(self, request: Request) -> Response:
        """`PUT /api/config/{prop}` with `{"value": …}` → `{prop, set: true}`, like `config/set`."""
        caller = await authorize(request, self.services, self.registry, "config/set")
        prop = request.path_params["prop"]
        if not 0 < len(prop) <= MAX_PROP_CHARS:
            raise ApiError(400, "invalid_params", "Invalid params", errors=[_field("prop", "string_too_long")])
        body = await _json_object(request)
        if "value" not in body:
            raise ApiError(400, "invalid_params", 'Body must be {"value": …}', errors=[_field("value")])
        grant = grant_of(self.registry, "config/set")

        def check(requested: Sequence[str]) -> None:
            # Runs under the config write lock: the caller's authority as of now, not as of the request (R-CFG-3).
            principal = self.services.auth.refresh(caller.credential)
            if principal is None:
                self.services.audit.record("denied", caller.peer, caller.principal.id)
                raise ApiError(401, "auth_required", "The bearer token is no longer valid")
            if not principal.has_grant(grant):
                raise policy.Forbidden(f"Missing grant {grant}", grant=grant)
            policy.check_config_write(principal, requested, indexed=False)

        await self.services.config_store.set(prop, body["value"], authorize=check)
        return json_response({"prop": prop, "set": True})


def _field(name: str, type_: str = "missing", message: str = "required") -> dict[str, str]:
    return {"field": name, "type": type_, "message": message}


async def _json_object(request: Request, *, optional: bool = False) -> dict[str, Any]:
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


def _optional_str(body: dict[str, Any], key: str, max_chars: int) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= max_chars:
        raise ApiError(
            400, "invalid_params", "Invalid params", errors=[_field(key, "string_type", f"1 to {max_chars} chars")]
        )
    return value
