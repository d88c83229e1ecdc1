"""`POST /pair` (R-AUTH-4): a one-time 6-digit code (`X-Pairing-Code`) traded for a bearer token of the code's user,
with an optional body `{"user"?, "label"?}` validated as a params model is (its errors the `invalid_params` of
every one). No token: the code is the credential, and failed attempts lock pairing for a while (429).
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta
from starlette.requests import Request
from starlette.responses import Response

from app.auth.pairing_codes import PairingCodes, PairingLocked, PairingRejected
from app.storage import iso_z
from gateway.auth import http_peer
from gateway.errors import ApiError, json_response, mapped
from gateway.rest.body import json_object
from rpc.core.dispatcher import Dispatcher
from rpc.core.registry import Params, validate

__all__ = ["PairBody", "PairingApi"]

MAX_USER_CHARS = 128
MAX_LABEL_CHARS = 256


class PairBody(Params, frozen=True):
    """`POST /pair`'s optional body; unknown keys are ignored (the route reads only these two)."""

    user: (
        Annotated[str, Meta(min_length=1, max_length=MAX_USER_CHARS, description="must match the code's user if given")]
        | None
    ) = None
    label: Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)] | None = None


class PairingApi:
    def __init__(self, dispatcher: Dispatcher, pairing_codes: PairingCodes) -> None:
        self.dispatcher = dispatcher
        self.services = dispatcher.services
        self.pairing_codes = pairing_codes

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


def _field(name: str, type_: str = "missing", message: str = "required") -> dict[str, str]:
    return {"field": name, "type": type_, "message": message}
