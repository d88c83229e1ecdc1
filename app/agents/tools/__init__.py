"""The built-in tools (R-AGENT-3): `bash`, `read_file`, `write_file`, `ask_user`, `poll`.

Tools keep no state between calls (everything per call is in the `ToolContext`), so one instance of each is
shared by every session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from app.agents.base import Tool, ToolSpec
from app.agents.tools.ask_user import AskUserTool
from app.agents.tools.bash import BashTool
from app.agents.tools.files import ReadFileTool, WriteFileTool
from app.agents.tools.poll import PollTool

__all__ = [
    "BUILTIN_TOOLS",
    "AskUserTool",
    "BashTool",
    "PollTool",
    "ReadFileTool",
    "WriteFileTool",
    "build_tools",
    "tool_specs",
]

BUILTIN_TOOLS: Mapping[str, Tool] = {
    tool.spec.name: tool for tool in (BashTool(), ReadFileTool(), WriteFileTool(), AskUserTool(), PollTool())
}


def build_tools(names: Iterable[str]) -> dict[str, Tool]:
    """The tools an agent enables (`[agents.<a>] tools`), by name, in the given order.

    An unknown name is a ValueError that lists the built-ins: a typo should not silently drop a tool.
    """
    tools: dict[str, Tool] = {}
    for name in names:
        if name not in BUILTIN_TOOLS:
            raise ValueError(f"unknown tool {name!r}; the built-in tools are {', '.join(BUILTIN_TOOLS)}")
        tools[name] = BUILTIN_TOOLS[name]
    return tools


def tool_specs(tools: Mapping[str, Tool] | Sequence[Tool]) -> list[ToolSpec]:
    """What the provider is told: the specs of `tools`, in order."""
    values = tools.values() if isinstance(tools, Mapping) else tools
    return [tool.spec for tool in values]
