"""The daemon's MCP servers: started on first use, kept while in use, restarted after a crash (R-MCP-4)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.agents.base import Elicitation, ToolContext, ToolSpec
from app.agents.tools._common import fit_output

if TYPE_CHECKING:
    from app.agents.mcp.client import Connection
    from app.config.schema import Config, McpServer

__all__ = ["McpHub", "McpTool", "tool_name"]

log = logging.getLogger("zeroclaw.mcp")


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


@dataclass(slots=True)
class _Entry:
    server: McpServer
    connection: Connection | None = None
    error: str | None = None
    users: set[str] = field(default_factory=set)  # the live sessions whose turns used it


class McpTool:
    """One MCP server's tool, offered as `mcp__<server>__<tool>`; it needs approval like every built-in that acts."""

    needs_approval = True

    def __init__(self, hub: McpHub, key: str, server: str, tool: str, description: str, schema: dict[str, Any]):
        self.spec = ToolSpec(tool_name(server, tool), description, schema)
        self.server = server
        self._hub, self._key, self._tool = hub, key, tool

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return await self._hub.call(self._key, self._tool, arguments, context)


class McpHub:
    """Connections by key (a configured server's name, or `<session>/<name>` for a session's own)."""

    SWEEP_SECS = 1.0  # how often servers are checked for sessions that ended

    def __init__(self, config: Callable[[], Config], is_live: Callable[[str], bool] | None = None) -> None:
        """`is_live(session_id)`: whether a session is still in memory; a server none of whose sessions is
        stops (R-MCP-4). None: servers stop only with the daemon."""
        self._config = config
        self._is_live = is_live
        self._entries: dict[str, _Entry] = {}
        self._lock = asyncio.Lock()
        self._sweeper: asyncio.Task[None] | None = None

    def _sweep_soon(self) -> None:
        if self._is_live is not None and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="mcp:sweep")

    async def _sweep(self) -> None:
        """Stop the servers whose last session ended; end when none runs."""
        assert self._is_live is not None
        while any(e.connection is not None and e.connection.alive for e in self._entries.values()):
            await asyncio.sleep(self.SWEEP_SECS)
            for key, entry in list(self._entries.items()):
                entry.users = {sid for sid in entry.users if self._is_live(sid)}
                if entry.users:
                    continue
                if "/" in key:  # a session's own server: gone with it
                    self._entries.pop(key, None)
                if entry.connection is not None:
                    conn, entry.connection = entry.connection, None
                    await conn.stop()

    def _entry(self, key: str, server: McpServer) -> _Entry:
        entry = self._entries.get(key)
        if entry is None or entry.server != server:
            if entry is not None and entry.connection is not None:
                asyncio.get_running_loop().create_task(entry.connection.stop())
            entry = self._entries[key] = _Entry(server)
        return entry

    async def _connect(self, key: str, entry: _Entry) -> Connection:
        """The live connection, started (again) when there is none or it crashed."""
        async with self._lock:
            conn = entry.connection
            if conn is None or not conn.alive:
                from app.agents.mcp.client import Connection  # imports the `mcp` SDK: on first use only

                conn = entry.connection = Connection(key.rpartition("/")[2], entry.server)
        try:
            await conn.wait_ready(entry.server.startup_timeout_secs)
        except TimeoutError:
            await conn.stop()
            entry.error = f"did not start within {entry.server.startup_timeout_secs:g} s"
            raise RuntimeError(f"MCP server {key!r} {entry.error}") from None
        except RuntimeError as exc:
            entry.error = str(exc)
            raise
        entry.error = None
        return conn

    async def tools_for(
        self, names: Iterable[str], session_servers: Mapping[str, McpServer] | None = None, *, session_id: str = ""
    ) -> dict[str, McpTool]:
        """The tools of an agent's servers and a session's own, starting those not running. A server that does
        not start offers no tools this step (its error shows in `mcp/status`); the turn goes on."""
        config = self._config()
        wanted: list[tuple[str, str, McpServer]] = []
        for name in names:
            server = config.mcp.servers.get(name)
            if server is not None:
                wanted.append((name, name, server))
        for name, server in (session_servers or {}).items():
            wanted.append((f"{session_id}/{name}", name, server))
        out: dict[str, McpTool] = {}
        for key, name, server in wanted:
            entry = self._entry(key, server)
            if session_id:
                entry.users.add(session_id)
            try:
                conn = await self._connect(key, entry)
            except Exception as exc:
                log.warning("MCP server %r: %s", key, exc)
                continue
            allowed = set(server.tools) if server.tools else None
            for tool in conn.tools:
                if allowed is None or tool.name in allowed:
                    schema = tool.input_schema or {"type": "object", "properties": {}}
                    out[tool_name(name, tool.name)] = McpTool(
                        self, key, name, tool.name, tool.description or "", dict(schema)
                    )
        self._sweep_soon()
        return out

    async def call(self, key: str, tool: str, arguments: dict[str, Any], context: ToolContext) -> str:
        entry = self._entries.get(key)
        if entry is None:
            return f"The MCP server for {tool} is no longer configured."
        try:
            conn = await self._connect(key, entry)
        except Exception as exc:
            return f"The MCP tool {tool} could not run: {exc}"

        async def elicit(message: str, schema: dict[str, Any]) -> Elicitation:
            return await context.client.elicit(message, schema, timeout=context.ask_timeout_secs)

        timeout = entry.server.call_timeout_secs
        try:
            async with conn.floor.held(context.session_id, elicit):  # an elicitation goes to this session's client
                text = await asyncio.wait_for(conn.call(tool, arguments, timeout, context.progress), timeout + 1.0)
        except TimeoutError:
            return f"The MCP tool {tool} did not answer within {timeout:g} s."
        except Exception as exc:
            return f"The MCP tool {tool} failed: {_why(exc)}"
        data = text.encode()
        return fit_output(data, len(data), context.output_limit_bytes)

    def status(self) -> list[dict[str, Any]]:
        """`mcp/status`: every configured server and every session's own that was started."""
        config = self._config()
        rows: list[dict[str, Any]] = []
        keys = list(dict.fromkeys([*config.mcp.servers, *self._entries]))
        for key in keys:
            entry = self._entries.get(key)
            conn = entry.connection if entry else None
            error = (entry.error if entry else None) or (conn.error if conn is not None else None)
            if conn is not None and conn.alive:
                state = "ready" if conn.session is not None else "starting"
            else:
                state = "failed" if error else "stopped"
            tools = [t.name for t in conn.tools] if conn is not None and state == "ready" else []
            rows.append({"name": key, "state": state, "tools": tools, "error": error})
        return rows

    async def shutdown(self) -> None:
        """Stop every server (the daemon is stopping)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        entries, self._entries = list(self._entries.values()), {}
        await asyncio.gather(*(e.connection.stop() for e in entries if e.connection is not None))


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
