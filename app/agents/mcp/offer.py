"""What one turn is offered: the built-in tools and its MCP servers', listed again before every provider step."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from app.agents.base import Tool

if TYPE_CHECKING:
    from app.agents.mcp.hub import McpHub
    from app.config.schema import McpServer

__all__ = ["TurnTools"]


class TurnTools(Mapping[str, Tool]):
    """The built-ins and the MCP tools of an agent's servers and a session's own. `refresh(start=True)` before the
    first step starts the servers not running; `refresh()` before each later step takes a `list_changed` into
    account (R-MCP-3). Looking up `mcp__<server>__<tool>` of one of these servers that listed nothing (it did not
    start) finds a stand-in that tries again and says why it could not (R-MCP-4); iterating gives only what is
    offered."""

    def __init__(
        self,
        builtins: Mapping[str, Tool],
        hub: McpHub,
        servers: list[str],
        session_servers: Mapping[str, McpServer],
        session_id: str,
    ) -> None:
        self._builtins = dict(builtins)
        self._hub = hub
        self._servers = servers
        self._session_servers = dict(session_servers)
        self._session_id = session_id
        self._mcp: dict[str, Tool] = {}

    async def refresh(self, *, start: bool = False) -> None:
        listed = await self._hub.tools_for(
            self._servers, self._session_servers, session_id=self._session_id, start=start
        )
        self._mcp = {name: tool for name, tool in listed.items()}

    def __getitem__(self, name: str) -> Tool:
        tool = self._builtins.get(name) or self._mcp.get(name)
        if tool is None:
            tool = self._hub.stand_in(name, self._servers, self._session_servers, session_id=self._session_id)
        if tool is None:
            raise KeyError(name)
        return tool

    def __iter__(self) -> Iterator[str]:
        return iter({**self._builtins, **self._mcp})

    def __len__(self) -> int:
        return len({**self._builtins, **self._mcp})
