"""Who is calling `initialize` (R-AUTH-3, R-SEC-4), whatever dialect it asks for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from app.paths import process_uid
from rpc.core.errors import AuthRequired

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from rpc.core.context import CallContext

__all__ = ["Credentials", "authenticate"]


class Credentials(Protocol):
    """What `initialize` params say about the caller (`rpc.methods.lifecycle.InitializeParams`)."""

    @property
    def auth_token(self) -> str | None: ...

    @property
    def client_capabilities(self) -> dict[str, Any] | None: ...


async def authenticate(ctx: CallContext, params: Credentials) -> tuple[Any, Principal]:
    """The caller's credential and principal: the token given (in `initialize` or at the upgrade), else the
    local peer's uid; `AuthRequired` (signed out) when neither is accepted."""
    services = ctx.services
    peer = ctx.peer
    token = params.auth_token if params.auth_token is not None else peer.bearer_token
    if token is not None:
        resolved = await services.auth.token(token)
    elif ctx.surface.remote:
        resolved = None  # a WebSocket peer always needs a token (R-AUTH-3)
    else:
        # The OS did not say who connected: only the owner (or root) reaches a 0600 socket, and
        # only the owner (or SYSTEM) opens the Windows pipe (R-SEC-4).
        resolved = services.auth.local(peer.uid if peer.uid is not None else process_uid())
    if resolved is None:
        ctx.sign_out()  # a failed re-initialize must not leave the old principal in place
        raise AuthRequired("Authentication failed")  # audited as `denied` when answered
    return resolved
