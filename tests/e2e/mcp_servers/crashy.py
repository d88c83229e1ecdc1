"""A FastMCP (the SDK's `MCPServer`) stdio server for tests/e2e/test_e2e_mcp.py: `noop` answers at once, `pid` says
which process answered, `crash` ends the process mid-call, `slow` sleeps past a call timeout, `fail` is an isError
result, `ask` elicits a name, `steps` reports progress,
`grow` adds the tool `extra` (`notifications/tools/list_changed`), `ask_pair` elicits once a second call of it came
(or after 1 s: whichever is first)."""

from __future__ import annotations

import asyncio
import contextlib
import os

from mcp.server.mcpserver import AcceptedElicitation, Context, MCPServer
from pydantic import BaseModel

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


class Name(BaseModel):
    name: str


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the user's name (an MCP elicitation) and greet them."""
    answer = await ctx.elicit("What is your name?", schema=Name)
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"No name: {answer.action}"


_pair: list[asyncio.Event] = []


@server.tool()
async def ask_pair(ctx: Context) -> str:
    """Wait until this tool was called twice (at most 1 s), then ask a name: two sessions' questions at once."""
    arrived = asyncio.Event()
    _pair.append(arrived)
    for event in _pair:
        if len(_pair) >= 2:
            event.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(arrived.wait(), 1.0)
    answer = await ctx.elicit("What is your name?", schema=Name)
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"No name: {answer.action}"


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report `count` steps of progress, then answer."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
    return f"{count} steps done"


def extra() -> str:
    """A tool added at run time by `grow`."""
    return "extra here"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and tell the client its tool list changed."""
    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def fail() -> str:
    """Fail."""
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    server.run()
