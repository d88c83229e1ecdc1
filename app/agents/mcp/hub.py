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


class StartError(Exception):
    """A server did not start (in time); `str()` says why."""


@dataclass(slots=True)
class _Entry:
    server: McpServer
    connection: Connection | None = None
    error: str | None = None
    users: set[str] = field(default_factory=set)  # the live sessions whose turns used it
    listed: list[Any] = field(default_factory=list)  # its tools as last listed: still offered while it is down


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
        self._stopping: set[asyncio.Task[None]] = set()  # servers that did not start in time, being stopped

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
            # Given up on: it is stopped in the background (the SDK waits a while for a stdio server to exit).
            conn.task.cancel()
            self._stopping.add(conn.task)
            conn.task.add_done_callback(self._stopping.discard)
            if entry.connection is conn:
                entry.connection = None
            entry.error = f"it did not start within {entry.server.startup_timeout_secs:g} s"
            raise StartError(entry.error) from None
        except RuntimeError as exc:  # StartFailed: why it did not
            entry.error = str(exc)
            raise StartError(entry.error) from None
        entry.error = None
        return conn

    def _wanted(
        self, names: Iterable[str], session_servers: Mapping[str, McpServer] | None, session_id: str
    ) -> list[tuple[str, str, McpServer]]:
        """(key, name, server) of an agent's configured servers, then a session's own (which win a shared name)."""
        config = self._config()
        wanted: list[tuple[str, str, McpServer]] = []
        for name in names:
            server = config.mcp.servers.get(name)
            if server is not None:
                wanted.append((name, name, server))
        for name, server in (session_servers or {}).items():
            wanted.append((f"{session_id}/{name}", name, server))
        return wanted

    async def tools_for(
        self,
        names: Iterable[str],
        session_servers: Mapping[str, McpServer] | None = None,
        *,
        session_id: str = "",
        start: bool = True,
    ) -> dict[str, McpTool]:
        """The tools of an agent's servers and a session's own; `start`: starting those not running (a turn's
        first step), else as they are now (its later steps: a `list_changed` shows at the next step). A server
        that is down (it failed to start, or crashed) offers the tools it last listed, if it ever did: a call
        starts it again (`call`); its error shows in `mcp/status`, and the turn goes on."""
        out: dict[str, McpTool] = {}
        for key, name, server in self._wanted(names, session_servers, session_id):
            entry = self._entry(key, server)
            if session_id:
                entry.users.add(session_id)
            conn = entry.connection
            if start:
                try:
                    conn = await self._connect(key, entry)
                except StartError as exc:
                    log.warning("MCP server %r did not start: %s", key, exc)
            if conn is not None and conn.alive and conn.session is not None:
                entry.listed = await conn.listed()
            allowed = set(server.tools) if server.tools else None
            for tool in entry.listed:
                if allowed is None or tool.name in allowed:
                    schema = tool.input_schema or {"type": "object", "properties": {}}
                    out[tool_name(name, tool.name)] = McpTool(
                        self, key, name, tool.name, tool.description or "", dict(schema)
                    )
        self._sweep_soon()
        return out

    def stand_in(
        self,
        name: str,
        names: Iterable[str],
        session_servers: Mapping[str, McpServer] | None = None,
        *,
        session_id: str = "",
    ) -> McpTool | None:
        """A tool for a call naming `mcp__<server>__<tool>` of one of these servers that did not list it (it
        failed to start, so its tools are unknown): the call tries to start the server and says why it could not
        (R-MCP-4), instead of an unknown tool. None for any other name."""
        server, sep, tool = name.removeprefix("mcp__").partition("__")
        if not name.startswith("mcp__") or not sep or not tool:
            return None
        for key, wanted, config in reversed(self._wanted(names, session_servers, session_id)):
            if wanted == server and (not config.tools or tool in config.tools):
                conn = self._entry(key, config).connection
                if conn is not None and conn.alive and conn.session is not None:
                    return None  # it is up and did not list this tool: an unknown tool
                return McpTool(self, key, server, tool, "", {"type": "object", "properties": {}})
        return None

    async def call(self, key: str, tool: str, arguments: dict[str, Any], context: ToolContext) -> str:
        entry = self._entries.get(key)
        server = key.rpartition("/")[2]
        if entry is None:
            return f"The MCP server for {tool} is no longer configured."
        try:
            conn = await self._connect(key, entry)
        except StartError as exc:
            return (
                f"The MCP server {server!r} failed to start, so {tool_name(server, tool)} did not run: {exc}. "
                "It is tried again at the next call."
            )

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
        await asyncio.gather(*self._stopping, return_exceptions=True)


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
