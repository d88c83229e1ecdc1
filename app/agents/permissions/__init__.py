"""Permission rules for tool calls (SPEC §25, R-GUARD-1..3): patterns, reading shell commands, evaluating a call,
and remembered answers. One module per concept:

    patterns.py    `tool(glob)` patterns compiled once          (parse_pattern, literal_pattern)
    shell.py       a bash command read with tree-sitter-bash     (read_command; imported on first use)
    rules.py       deny > ask > allow > the tool's default        (RuleSet.evaluate → Verdict)
    remembered.py  stored rules as the domain sees them          (StoredRule, RuleBook, exact_pattern)
    store.py       the `permission_rules` table (SQLAlchemy)     (PermissionStore; imported by the daemon only)
"""

from __future__ import annotations

from app.agents.permissions.patterns import Pattern, literal_pattern, parse_pattern
from app.agents.permissions.remembered import RuleBook, StoredRule, exact_pattern
from app.agents.permissions.rules import Decision, Rule, RuleSet, Verdict, rules_from_lists

__all__ = [
    "Decision",
    "Pattern",
    "Rule",
    "RuleBook",
    "RuleSet",
    "StoredRule",
    "Verdict",
    "exact_pattern",
    "literal_pattern",
    "parse_pattern",
    "rules_from_lists",
]
