"""`tools/list` and `mcp/status` (R-MCP-3, R-MCP-4): the tools an agent or a session is offered, built-in and from
MCP servers (`app.agents.mcp.McpHub`), and the servers' states."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, UnsetType

from app.agents.tools import build_tools
from app.config.schema import KEY_RE, McpServer
from app.config.secret import Secret
from rpc.core.answers import Answer
from rpc.core.context import CallContext
from rpc.core.errors import Forbidden, InvalidParams
from rpc.core.registry import Contract, NoParams, Params, Registry, SessionId
from rpc.methods.models import AgentAlias, usable_agent

__all__ = [
    "McpServerState",
    "McpStatus",
    "ToolEntry",
    "ToolList",
    "ToolsParams",
    "give_session_servers",
    "register",
    "session_servers",
]

MAX_SESSION_SERVERS = 32


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


def session_servers(ctx: CallContext, entries: list[Any] | None, field: str = "mcpServers") -> dict[str, McpServer]:
    """A session's own servers (R-MCP-2) from ACP's shapes: stdio `{name, command, args, env: [{name, value}]}`,
    http `{type: "http", name, url, headers: [{name, value}]}`. A stdio entry starts a process on this host, so a
    gateway peer gets -32012 `local_only`; an sse entry is refused (`mcpCapabilities.sse` is false)."""
    if not entries:
        return {}
    if len(entries) > MAX_SESSION_SERVERS:
        raise InvalidParams(f"at most {MAX_SESSION_SERVERS} MCP servers per session", field=field)
    out: dict[str, McpServer] = {}
    for index, entry in enumerate(entries):
        where = f"{field}[{index}]"
        if not isinstance(entry, dict):
            raise InvalidParams(f"{where} must be an object", field=where)
        name, kind = entry.get("name"), entry.get("type", "stdio")
        if not isinstance(name, str) or not KEY_RE.match(name) or "__" in name or name in out:
            raise InvalidParams(f"{where}.name must be a unique name of letters, digits, '_' or '-'", field=where)
        try:
            if kind == "stdio":
                if ctx.surface.remote:
                    raise Forbidden(
                        "A stdio MCP server starts a process on the daemon's host: only the local endpoint may "
                        "add one; use an http server",
                        kind="local_only",
                    )
                out[name] = McpServer(
                    command=str(entry["command"]),
                    args=[str(a) for a in entry.get("args") or []],
                    env=_pairs(entry.get("env")),
                    cwd=entry.get("cwd") if isinstance(entry.get("cwd"), str) else None,
                )
            elif kind == "http":
                out[name] = McpServer(url=str(entry["url"]), headers=_pairs(entry.get("headers")))
            else:
                raise InvalidParams(f"{where}.type {kind!r} is not supported (stdio or http)", field=where)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParams(f"{where} is not a valid MCP server: {exc}", field=where) from None
    return out


def _pairs(raw: Any) -> dict[str, Secret]:
    """ACP's `[{name, value}]` (or a plain object) as secrets: env values and headers are never shown."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(k): Secret(str(v)) for k, v in raw.items()}
    return {str(p["name"]): Secret(str(p["value"])) for p in raw}


def give_session_servers(ctx: CallContext, session_id: str, servers: dict[str, McpServer]) -> None:
    """Add `servers` to a live session's own (a name given again replaces the earlier one), from its next step."""
    if servers:
        live = ctx.services.sessions.live[session_id]
        live.mcp_servers = {**live.mcp_servers, **servers}
