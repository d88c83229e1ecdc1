"""`pairing/create`, `pairing/list`, `pairing/revoke` (R-AUTH-4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from msgspec import Meta

from app.auth.pairing_codes import CODE_RE
from app.storage import iso_z
from rpc.core.answers import TRUE, Answer, DateTime
from rpc.core.context import CallContext
from rpc.core.errors import Forbidden, InvalidParams
from rpc.core.registry import Contract, NoParams, Params, Registry

if TYPE_CHECKING:
    from app.auth.pairing import PairingRecord

__all__ = ["PAIRING_CODE_PATTERN", "PairedToken", "register"]

PAIRING_CODE_PATTERN = "^" + CODE_RE.pattern.removesuffix(r"\Z") + "$"


class CreateParams(Params, frozen=True):
    user: Annotated[str, Meta(min_length=1, max_length=128)]
    label: Annotated[str, Meta(max_length=256)] | None = None


class RevokeParams(Params, frozen=True):
    token_id: Annotated[str, Meta(min_length=1, max_length=64)]


class CodeParams(Params, frozen=True):
    user: Annotated[str, Meta(min_length=1, max_length=128)]
    label: Annotated[str, Meta(max_length=256)] | None = None


class PairedToken(Answer, frozen=True):
    token_id: str
    token: Annotated[str, Meta(pattern=r"^zc_[0-9a-f]{64}$")]
    user: str
    created_at: DateTime


class PairingCode(Answer, frozen=True):
    code: Annotated[str, Meta(pattern=PAIRING_CODE_PATTERN)]
    user: str
    expires_in_secs: int


class TokenRow(Answer, frozen=True):
    token_id: str
    user: str
    label: str | None
    created_at: DateTime
    last_used_at: DateTime | None


class TokenList(Answer, frozen=True):
    tokens: list[TokenRow]


class TokenRevoked(Answer, frozen=True):
    token_id: str
    revoked: TRUE


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    paired = c("Pair a user: a new bearer token, shown once", PairedToken, ("forbidden",), storage=True)
    method("pairing/create", params=CreateParams, grant="pairing:create", contract=paired)(create)
    # Local only: a one-time code is how a browser or remote peer gets its first token (`POST /pair`).
    coded = c("A one-time 6-digit code a browser trades for a token at POST /pair", PairingCode)
    method("pairing/code", params=CodeParams, grant="pairing:create", local_only=True, contract=coded)(code)
    listed = c("The active paired tokens (admin: everyone's)", TokenList, storage=True)
    method("pairing/list", params=NoParams, grant="pairing:read", contract=listed)(list_tokens)
    revoked = c("Revoke a paired token", TokenRevoked, storage=True)
    method("pairing/revoke", params=RevokeParams, grant="pairing:delete", contract=revoked)(revoke)


def _record(record: PairingRecord) -> dict[str, Any]:
    return {
        "tokenId": record.token_id,
        "user": record.user,
        "label": record.label,
        "createdAt": iso_z(record.created_at),
        "lastUsedAt": iso_z(record.last_used_at) if record.last_used_at else None,
    }


def _check_pairable(ctx: CallContext, user: str) -> None:
    principal = ctx.principal
    if not principal.admin and principal.user != user:
        raise Forbidden("A non-admin principal may pair only its own user", grant="pairing:create")
    if ctx.services.auth.policy().for_user(user) is None:
        unknown = {"field": "user", "type": "unknown_user", "message": "no such user"}
        raise InvalidParams("Unknown user", errors=[unknown])


def code(ctx: CallContext, params: CodeParams) -> dict[str, Any]:
    _check_pairable(ctx, params.user)
    codes = ctx.services.pairing_codes
    return {"code": codes.issue(params.user, params.label), "user": params.user, "expiresInSecs": codes.ttl_secs}


async def create(ctx: CallContext, params: CreateParams) -> dict[str, Any]:
    _check_pairable(ctx, params.user)
    record, token = await ctx.services.pairing.create(params.user, params.label)
    return {"tokenId": record.token_id, "token": token, "user": record.user, "createdAt": iso_z(record.created_at)}


async def list_tokens(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    principal = ctx.principal
    records = await ctx.services.pairing.store.list_active(None if principal.admin else principal.user or "")
    return {"tokens": [_record(r) for r in records]}


async def revoke(ctx: CallContext, params: RevokeParams) -> dict[str, Any]:
    principal = ctx.principal
    store = ctx.services.pairing.store
    visible = await store.list_active(None if principal.admin else principal.user or "")
    if not any(r.token_id == params.token_id for r in visible):
        # Unknown, already revoked, or another user's token: the same answer, so ids cannot be probed.
        raise InvalidParams(
            "Unknown token", errors=[{"field": "tokenId", "type": "unknown_token", "message": "no active token"}]
        )
    await ctx.services.pairing.revoke(params.token_id)
    return {"tokenId": params.token_id, "revoked": True}
