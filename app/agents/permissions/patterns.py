"""Permission patterns (R-GUARD-1): `tool`, `tool(argument glob)`, e.g. `bash(git status*)`, `write_file(src/**)`,
`read_file(**/.env)`, `mcp__github__*`.

A pattern without parentheses names tools (a glob over the tool name) and matches every call of them. With
parentheses it matches the call's argument: the command of `bash`, the path of the file tools. Globs are compiled
once to a regex (never interpreted per call):

* commands (`bash`): `*` is any run of characters, spaces and slashes included; a pattern ending in ` *` also
  matches the command without arguments (`git status *` matches `git status`);
* paths: `*` and `?` stay inside one path segment, `**` crosses segments, and `**/` may match no directory at all
  (`**/.env` matches `.env`);
* `\\` quotes the next character, so a remembered exact command keeps its `*` literal (`literal_pattern`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = ["ArgumentKind", "Pattern", "argument_kind", "literal_pattern", "parse_pattern"]

ArgumentKind = Literal["command", "path", "none"]

# Which argument a tool's pattern reads; tools not listed here take only bare (tool-name) patterns.
_ARGUMENTS: dict[str, tuple[str, ArgumentKind]] = {
    "bash": ("command", "command"),
    "read_file": ("path", "path"),
    "write_file": ("path", "path"),
}
_TOOL_RE = re.compile(r"[A-Za-z0-9_*?.-]+\Z")
_GLOB_CHARS = frozenset("*?\\")


def argument_kind(tool: str) -> tuple[str, ArgumentKind]:
    """The argument name a tool's patterns match, and how (`("", "none")` for tools matched by name only)."""
    return _ARGUMENTS.get(tool, ("", "none"))


@dataclass(frozen=True, slots=True)
class Pattern:
    """One parsed pattern. `text` is how it was written (what a denial quotes)."""

    text: str
    tool: re.Pattern[str]
    argument: re.Pattern[str] | None  # None: every call of the tool
    literal: str | None  # the argument when the glob has no wildcard (an exact command or path)
    tool_literal: str | None  # the tool name when it has no wildcard (for indexing)
    head: str | None = None  # a command glob's first word when it is plain text (`git` of `git status*`)

    def matches_tool(self, name: str) -> bool:
        return self.tool.match(name) is not None

    def matches_argument(self, value: str) -> bool:
        return self.argument is None or self.argument.match(value) is not None


def parse_pattern(text: str) -> Pattern:
    """`text` as a `Pattern`; ValueError saying what is wrong (config validation shows it)."""
    raw = text.strip()
    if not raw:
        raise ValueError("a permission pattern must not be empty")
    name, paren, rest = raw.partition("(")
    name = name.strip()
    if not _TOOL_RE.match(name):
        raise ValueError(f"{text!r}: the tool name may use letters, digits, '_', '-', '.', '*' and '?'")
    tool_literal = None if any(c in name for c in "*?") else name
    if not paren:
        return Pattern(raw, _compile(name, "name"), None, None, tool_literal)
    if not rest.endswith(")"):
        raise ValueError(f"{text!r}: a pattern with an argument is written tool(glob), ending in ')'")
    glob = rest[:-1]
    if not glob:
        raise ValueError(f"{text!r}: the argument glob in parentheses must not be empty")
    if tool_literal is None:
        raise ValueError(f"{text!r}: a pattern with an argument names one tool, without wildcards")
    kind = argument_kind(tool_literal)[1]
    if kind == "none":
        raise ValueError(f"{text!r}: the tool {tool_literal!r} takes no argument pattern; write just its name")
    head = _head(glob) if kind == "command" else None
    return Pattern(raw, _compile(tool_literal, "name"), _compile(glob, kind), _literal(glob), tool_literal, head)


def literal_pattern(tool: str, argument: str) -> str:
    """The pattern that matches exactly `argument` of `tool` (a remembered answer's rule)."""
    escaped = "".join("\\" + c if c in _GLOB_CHARS or c in "()" else c for c in argument)
    return f"{tool}({escaped})"


def _head(glob: str) -> str | None:
    """The command name a command glob starts with, when it has no wildcard or escape before the first space."""
    word, _, rest = glob.partition(" ")
    if not word or any(c in _GLOB_CHARS for c in word):
        return None
    return word if rest or glob == word else None


def _literal(glob: str) -> str | None:
    out: list[str] = []
    chars = iter(glob)
    for c in chars:
        if c == "\\":
            out.append(next(chars, "\\"))
        elif c in "*?":
            return None
        else:
            out.append(c)
    return "".join(out)


@lru_cache(maxsize=4096)
def _compile(glob: str, kind: ArgumentKind | Literal["name"]) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if c == "*":
            if kind == "path" and glob.startswith("**", i):
                if glob.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            if kind == "command" and i == n - 1 and i > 0 and glob[i - 1] == " ":
                out[-1] = "(?: .*)?"  # `git status *` also matches `git status`
                i += 1
                continue
            out.append("[^/]*" if kind == "path" else ".*")
        elif c == "?":
            out.append("[^/]" if kind == "path" else ".")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)
