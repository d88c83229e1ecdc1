"""Remembered answers (R-GUARD-3) as the domain sees them: a stored rule, the book that keeps them, and the
pattern an `allow_always` remembers when the caller gives none (the exact command or path)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from app.agents.permissions.patterns import argument_kind, literal_pattern, parse_pattern
from app.agents.permissions.rules import Decision, Rule

__all__ = ["RuleBook", "StoredRule", "exact_pattern"]


@dataclass(frozen=True, slots=True)
class StoredRule:
    rule_id: str
    principal: str
    agent_alias: str
    decision: str
    pattern: str
    created_at: datetime

    def rule(self) -> Rule:
        decision = cast("Decision", self.decision if self.decision in ("allow", "deny") else "ask")
        return Rule(decision, parse_pattern(self.pattern), f"stored rule {self.rule_id}")


class RuleBook(Protocol):
    """`app.agents.permissions.store.PermissionStore`, as turns and the methods use it."""

    async def add(self, principal: str, agent_alias: str, decision: str, pattern: str) -> StoredRule: ...

    async def list(self, principal: str | None = None, agent_alias: str | None = None) -> list[StoredRule]: ...

    async def get(self, rule_id: str) -> StoredRule | None: ...

    async def delete(self, rule_id: str) -> bool: ...


def exact_pattern(tool: str, arguments: Mapping[str, Any]) -> str:
    """The rule that allows exactly this call again: its command or path, or the whole tool when it has neither."""
    name, kind = argument_kind(tool)
    value = arguments.get(name) if name else None
    if kind != "none" and isinstance(value, str) and value:
        return literal_pattern(tool, value)
    return tool
