"""`tools/list` and `mcp/status` (R-MCP-3, R-MCP-4): the tools an agent or a session is offered, built-in and from
MCP servers (`app.agents.mcp.McpHub`), and the servers' states."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, UnsetType

from app.agents.tools import build_tools
from rpc.core.answers import Answer
from rpc.core.context import CallContext
from rpc.core.registry import Contract, NoParams, Params, Registry, SessionId
from rpc.methods.models import AgentAlias, usable_agent

__all__ = ["McpServerState", "McpStatus", "ToolEntry", "ToolList", "ToolsParams", "register"]


class ToolsParams(Params, frozen=True):
    """A session's tools (its agent's and its own MCP servers'), else an agent's (`default` when neither)."""

    session_id: SessionId | UnsetType = UNSET
    agent_alias: AgentAlias | UnsetType = UNSET


class ToolEntry(Answer, frozen=True):
    """One tool as the model is offered it; `server` names the MCP server (null for a built-in)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str | None


class ToolList(Answer, frozen=True):
    tools: list[ToolEntry]


class McpServerState(Answer, frozen=True):
    """A server's state; `tools` its tool names while ready, `error` why it failed or last stopped."""

    name: str
    state: Literal["starting", "ready", "failed", "stopped"]
    tools: list[str]
    error: str | None


class McpStatus(Answer, frozen=True):
    servers: list[McpServerState]


def register(registry: Registry) -> None:
    listed = Contract(
        "The tools a session or an agent is offered: built-in and from MCP servers (started if need be)",
        ToolList,
        ("forbidden", "session_not_found", "session_not_owned"),
    )
    registry.method("tools/list", params=ToolsParams, grant="sessions:read", contract=listed)(tools_list)
    status = Contract("The MCP servers and their states", McpStatus, ("forbidden",))
    registry.method("mcp/status", params=NoParams, grant="sessions:read", contract=status)(mcp_status)


async def tools_list(ctx: CallContext, params: ToolsParams) -> dict[str, Any]:
    sessions = ctx.services.sessions
    own: dict[str, Any] = {}
    session_id = ""
    if isinstance(params.session_id, str):
        live = sessions.owned_live(ctx.principal, params.session_id)
        agent = usable_agent(ctx, live.agent_alias)
        own, session_id = dict(live.mcp_servers), live.session_id
    else:
        agent = usable_agent(ctx, params.agent_alias if isinstance(params.agent_alias, str) else "default")
    tools: list[dict[str, Any]] = [
        {"name": t.spec.name, "description": t.spec.description, "inputSchema": t.spec.parameters, "server": None}
        for t in build_tools(agent.tools).values()
    ]
    for name, tool in (await sessions.turns.mcp.tools_for(agent.mcp_servers, own, session_id=session_id)).items():
        spec = tool.spec
        tools.append(
            {"name": name, "description": spec.description, "inputSchema": spec.parameters, "server": tool.server}
        )
    return {"tools": tools}


def mcp_status(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    return {"servers": ctx.services.sessions.turns.mcp.status()}
