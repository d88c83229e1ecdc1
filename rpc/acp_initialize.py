"""ACP's `initialize` (R-EDIT-2): version 1 whatever was asked, and only the capabilities that work."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rpc.acp_dialect import ACP
from rpc.acp_methods import AcpAuthRequired
from rpc.acp_peer import peer_of
from rpc.errors import AuthRequired
from rpc.methods.authenticate import authenticate

if TYPE_CHECKING:
    from rpc.context import CallContext
    from rpc.methods.authenticate import Credentials

__all__ = ["PROTOCOL_VERSION", "initialize"]

PROTOCOL_VERSION = 1  # ACP's; any other version asked for is answered with this one


async def initialize(ctx: CallContext, params: Credentials, marker: Mapping[str, Any]) -> dict[str, Any]:
    """Sign the caller in to the ACP dialect. `marker`: the bridge's (`{"agent": ALIAS}`), `{}` on `/acp`."""
    try:
        credential, principal = await authenticate(ctx, params)
    except AuthRequired as exc:
        raise AcpAuthRequired(exc.message) from None
    capabilities = dict(params.client_capabilities or {})
    elicitation = capabilities.pop("elicitation", None)
    if isinstance(elicitation, Mapping) and isinstance(elicitation.get("form"), Mapping):
        capabilities["elicitation"] = elicitation  # questions only for clients showing forms
    ctx.sign_in(credential, principal, capabilities, dialect=ACP)
    agent = marker.get("agent") or ctx.peer.agent
    peer_of(ctx.client).agent = agent if isinstance(agent, str) and agent else "default"
    ctx.services.audit.record("initialize", ctx.peer.label, principal.id)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": False, "sse": False},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
        },
        "authMethods": [],
        "agentInfo": {"name": "zeroclaw", "title": "ZeroClaw", "version": ctx.services.version},
    }
