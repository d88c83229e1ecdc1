"""Tools from MCP servers (R-MCP): `McpHub` keeps one client per configured server and offers each server's
tools as `mcp__<server>__<tool>`. The `mcp` SDK is imported on first use (app.agents.mcp.client), so a daemon
with no server configured never loads it."""

from app.agents.mcp.hub import McpHub, McpTool, tool_name
from app.agents.mcp.offer import TurnTools

__all__ = ["McpHub", "McpTool", "TurnTools", "tool_name"]
