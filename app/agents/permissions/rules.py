"""Evaluating a tool call against the permission rules (R-GUARD-1, R-GUARD-2).

Deny wins over ask, ask over allow; with no match the tool's default applies. For `bash` the command is read
(`app.agents.permissions.shell`) and:

* a deny or ask rule matches when it matches the command as written or any simple command in it (inner ones
  included: `rm` in `git status $(rm x)`), the command name also tried without its directory (`/bin/rm`); a
  redirection is checked as the `write_file`/`read_file` call it amounts to;
* an allow rule with a pattern allows the command only when every simple command in it is matched by some allow
  rule and every file it redirects to is allowed too, and the parser could read all of it (an opaque command is
  asked); a rule with no wildcard (a remembered exact command) also allows that exact command as written.

Patterns of one decision for one tool are joined into compiled alternations, indexed by command name, so a call
costs a regex match or two per candidate string whatever the number of rules.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from app.agents.permissions.patterns import Pattern, argument_kind, parse_pattern

__all__ = ["DECISIONS", "Decision", "Rule", "RuleSet", "Verdict", "rules_from_lists"]

Decision = Literal["allow", "ask", "deny"]
DECISIONS: tuple[Decision, ...] = ("deny", "ask", "allow")
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


@dataclass(frozen=True, slots=True)
class Rule:
    decision: Decision
    pattern: Pattern
    source: str  # where it comes from: `[permissions]`, `[agents.a.permissions]`, `auto_approve`, `stored rule …`

    def describe(self) -> str:
        return f"{self.decision} rule {self.pattern.text!r} ({self.source})"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    rule: Rule | None = None  # None: the tool's default
    note: str | None = None  # why a call an allow rule covers is still asked (e.g. a substitution)

    def denial(self, tool: str) -> str:
        """The tool result of a denied call (R-GUARD-2)."""
        named = self.rule.describe() if self.rule else "the permission rules"
        return f"Denied by the {named}: this {tool} call was not run and nobody was asked."


def rules_from_lists(lists: Mapping[str, Sequence[str]], source: str) -> list[Rule]:
    """`{"allow": [...], "ask": [...], "deny": [...]}` as rules (patterns were validated with the config)."""
    return [Rule(d, parse_pattern(text), source) for d in DECISIONS for text in lists.get(d, ())]


@dataclass(frozen=True, slots=True)
class _Group:
    """The rules of one decision that apply to one tool. Command patterns that start with a plain command name
    (`git status*`) are indexed by it, so a command is matched only against the patterns of its own name plus the
    few that start with a wildcard: one regex match or two per candidate, whatever the number of rules."""

    whole: tuple[Rule, ...]  # no argument pattern: every call
    argued: tuple[Rule, ...]
    by_head: Mapping[str, tuple[re.Pattern[str], tuple[Rule, ...]]]  # command name → its patterns joined, its rules
    generic: re.Pattern[str] | None  # the other argument patterns joined
    generic_rules: tuple[Rule, ...]
    literals: frozenset[str]  # exact arguments (no wildcard)

    def _match(self, value: str) -> tuple[Rule, ...] | None:
        """The rules to look for the match among, when some rule matches `value`; else None."""
        indexed = self.by_head.get(value.partition(" ")[0]) if self.by_head else None
        if indexed is not None and indexed[0].match(value):
            return indexed[1]
        if self.generic is not None and self.generic.match(value):
            return self.generic_rules
        return None

    def hit(self, candidates: Iterable[str]) -> Rule | None:
        if self.whole:
            return self.whole[0]
        if not self.argued:
            return None
        for value in candidates:
            if (among := self._match(value)) is not None:
                return next(r for r in among if r.pattern.matches_argument(value))
        return None

    def matches(self, value: str) -> bool:
        return bool(self.whole) or (bool(self.argued) and self._match(value) is not None)


_EMPTY = _Group((), (), {}, None, (), frozenset())


@lru_cache(maxsize=1024)
def _join(sources: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{s})" for s in sources), re.DOTALL)


def _group(rules: Sequence[Rule]) -> _Group:
    if not rules:
        return _EMPTY
    whole = tuple(r for r in rules if r.pattern.argument is None)
    argued = tuple(r for r in rules if r.pattern.argument is not None)
    heads: dict[str, list[Rule]] = {}
    generic: list[Rule] = []
    for rule in argued:
        if rule.pattern.head is None:
            generic.append(rule)
        else:
            heads.setdefault(rule.pattern.head, []).append(rule)
    by_head = {head: (_join(_sources(rules)), tuple(rules)) for head, rules in heads.items()}
    literals = frozenset(r.pattern.literal for r in argued if r.pattern.literal is not None)
    return _Group(whole, argued, by_head, _join(_sources(generic)) if generic else None, tuple(generic), literals)


def _sources(rules: Sequence[Rule]) -> tuple[str, ...]:
    return tuple(r.pattern.argument.pattern for r in rules if r.pattern.argument is not None)


class RuleSet:
    """Rules of every source for one turn, grouped per tool and decision on first use."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._groups: dict[tuple[str, Decision], _Group] = {}

    def add(self, rule: Rule) -> None:
        self.rules += (rule,)
        self._groups.clear()

    def group(self, tool: str, decision: Decision) -> _Group:
        key = (tool, decision)
        found = self._groups.get(key)
        if found is None:
            found = _group([r for r in self.rules if r.decision == decision and r.pattern.matches_tool(tool)])
            self._groups[key] = found
        return found

    def evaluate(
        self, tool: str, arguments: Mapping[str, Any], *, default: Decision, workspace: Path | None
    ) -> Verdict:
        name, kind = argument_kind(tool)
        value = arguments.get(name) if name else None
        if kind == "command" and isinstance(value, str):
            return self._command(value, default, workspace)
        candidates = _path_candidates(value, workspace) if kind == "path" and isinstance(value, str) else ()
        for decision in DECISIONS:
            # Deny and ask match the path as written or normalised; allow only the normalised one, so
            # `src/../../etc/x` is not under `src/**`.
            rule = self.group(tool, decision).hit(candidates[-1:] if decision == "allow" else candidates)
            if rule is not None:
                return Verdict(decision, rule)
        return Verdict(default)

    def _command(self, command: str, default: Decision, workspace: Path | None) -> Verdict:
        deny, ask, allow = (self.group("bash", d) for d in DECISIONS)
        if deny.whole:
            return Verdict("deny", deny.whole[0])
        if not (deny.argued or ask.argued or allow.argued):  # nothing to read the command for
            if ask.whole:
                return Verdict("ask", ask.whole[0])
            return Verdict("allow", allow.whole[0]) if allow.whole else Verdict(default)
        from app.agents.permissions.shell import read_command  # tree-sitter on the first bash rule check

        reading = read_command(command)
        candidates = [command, *_with_bare_names(reading.commands)]
        checks: tuple[tuple[Decision, _Group], ...] = (("deny", deny), ("ask", ask))
        for decision, group in checks:
            rule = group.hit(candidates)
            if rule is None:
                for redirect in reading.redirects:
                    files = self.group(redirect.tool, decision).hit(_path_candidates(redirect.path, workspace))
                    if files is not None:
                        rule = files
                        break
            if rule is not None:
                return Verdict(decision, rule)
        if allow.whole:
            return Verdict("allow", allow.whole[0])
        if command in allow.literals:
            return Verdict("allow", next(r for r in allow.argued if r.pattern.literal == command))
        if not allow.argued:
            return Verdict(default)
        if not all(allow.matches(part) for part in reading.commands):
            return Verdict(default)
        if not reading.readable:
            return Verdict(default, note=f"it has {reading.opaque[0]}, which a rule cannot vet")
        for redirect in reading.redirects:
            if redirect.path in _HARMLESS_TARGETS:
                continue
            file_default: Decision = "allow" if redirect.tool == "read_file" else "ask"
            if (
                self.evaluate(
                    redirect.tool, {"path": redirect.path}, default=file_default, workspace=workspace
                ).decision
                != "allow"
            ):
                return Verdict(default, note=f"it redirects to {redirect.path!r}, which no rule allows")
        return Verdict("allow", allow.hit(reading.commands[:1]))


def _with_bare_names(commands: Sequence[str]) -> list[str]:
    out = list(commands)
    for command in commands:
        head, sep, rest = command.partition(" ")
        if "/" in head:
            out.append(posixpath.basename(head) + sep + rest)
    return out


def _path_candidates(path: str, workspace: Path | None) -> tuple[str, ...]:
    """The path as written and normalized: relative to the workspace when inside it, else absolute."""
    if workspace is None:
        return (path, posixpath.normpath(path))
    root = str(workspace)
    absolute = posixpath.normpath(path if path.startswith("/") else posixpath.join(root, path))
    if absolute == root:
        return (path, ".")
    if absolute.startswith(root.rstrip("/") + "/"):
        return (path, os.path.relpath(absolute, root))
    return (path, absolute)
