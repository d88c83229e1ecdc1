"""A FastMCP (the SDK's `MCPServer`) stdio server for tests/e2e/test_e2e_mcp.py: `noop` answers at once, `pid` says
which process answered, `crash` ends the process mid-call, `slow` sleeps past a call timeout, `fail` is an isError
result."""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def noop() -> str:
    """Do nothing."""
    return "ok"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """End this server's process at once."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def fail() -> str:
    """Fail."""
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    server.run()
