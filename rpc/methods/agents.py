"""`agents/status` (R-ZC-4): the configured agents with the caller's live and stored session counts
(`app.agents.status`)."""

from __future__ import annotations

from typing import Any

from app.agents.status import AgentStatus, agent_statuses
from rpc.core.answers import Answer, wire_model
from rpc.core.context import CallContext
from rpc.core.registry import Contract, NoParams, Registry

__all__ = ["AgentList", "register"]

AgentRow = wire_model(AgentStatus, name="AgentRow", doc="One configured agent, as the caller may use it.")


class AgentList(Answer, frozen=True):
    agents: list[AgentRow]  # type: ignore[valid-type]


def register(registry: Registry) -> None:
    answers = Contract("The configured agents, as the caller may use them", AgentList, storage=True)
    registry.method("agents/status", params=NoParams, grant="sessions:read", contract=answers)(status)


async def status(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    services = ctx.services
    sessions = services.sessions
    agents = await agent_statuses(services.config, ctx.principal, sessions.live, sessions.store)
    return {"agents": ctx.wire(agents)}
