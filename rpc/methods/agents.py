"""`agents/status` (R-ZC-4): the configured agents with the caller's live and stored session counts
(`app.agents.status`)."""

from __future__ import annotations

from typing import Any

from app.agents.status import agent_statuses
from rpc.core.context import CallContext
from rpc.core.registry import NoParams, Registry

__all__ = ["register"]


def register(registry: Registry) -> None:
    registry.method("agents/status", params=NoParams, grant="sessions:read")(status)


async def status(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    services = ctx.services
    sessions = services.sessions
    agents = await agent_statuses(services.config, ctx.principal, sessions.live, sessions.store)
    return {"agents": ctx.wire(agents)}
