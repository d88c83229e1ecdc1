"""The methods a daemon serves, from its own `rpc.discover` (R-DISC-1): what `zeroclaw rpc --list` prints, and the
method names the interactive `zeroclaw rpc` completes with Tab."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from rpc.client import Client

__all__ = ["MethodCompleter", "discover"]


async def discover(client: Client) -> list[dict[str, Any]]:
    """The daemon's methods as its OpenRPC document lists them (answered before `initialize` too)."""
    document = await client.call("rpc.discover")
    methods: list[dict[str, Any]] = document["methods"]
    return methods


class MethodCompleter:
    """readline's completer of the first word of a line: a method name (a JSON frame is typed as it is)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = sorted(names)
        self._matches: list[str] = []

    def complete(self, text: str, state: int) -> str | None:
        if state == 0:
            self._matches = [name for name in self._names if name.startswith(text)] if _at_first_word() else []
        return self._matches[state] if state < len(self._matches) else None

    def install(self) -> None:
        readline = sys.modules.get("readline")  # imported by the interactive client where it exists
        if readline is None:
            return
        readline.set_completer(self.complete)
        readline.set_completer_delims(" \t\n")  # a method name holds `/`, `.` and `-`
        # libedit (macOS's Python) binds Tab with its own syntax.
        binding = "bind ^I rl_complete" if "libedit" in (readline.__doc__ or "") else "tab: complete"
        readline.parse_and_bind(binding)


def _at_first_word() -> bool:
    readline = sys.modules.get("readline")
    return readline is None or readline.get_begidx() == 0
