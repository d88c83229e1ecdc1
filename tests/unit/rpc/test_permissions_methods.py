"""`permissions/list` and `permissions/delete` (R-GUARD-3): a principal sees and deletes its own rules, an admin
everyone's; another principal's rule is "unknown" (ids cannot be probed)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from app.agents.permissions import StoredRule
from app.auth.policy import Principal
from rpc.core.errors import InvalidParams
from rpc.methods.permissions import DeleteParams, ListParams, delete_rule, list_rules

pytestmark = pytest.mark.req("R-GUARD-3")


class Book:
    def __init__(self, *rules: StoredRule) -> None:
        self.rules = {r.rule_id: r for r in rules}

    async def add(self, principal: str, agent_alias: str, decision: str, pattern: str) -> StoredRule:
        raise NotImplementedError

    async def list(self, principal: str | None = None, agent_alias: str | None = None) -> list[StoredRule]:
        return [
            r
            for r in self.rules.values()
            if (principal is None or r.principal == principal) and (agent_alias is None or r.agent_alias == agent_alias)
        ]

    async def get(self, rule_id: str) -> StoredRule | None:
        return self.rules.get(rule_id)

    async def delete(self, rule_id: str) -> bool:
        return self.rules.pop(rule_id, None) is not None


def rule(rule_id: str, principal: str, agent: str = "default") -> StoredRule:
    return StoredRule(rule_id, principal, agent, "allow", f"bash(echo {rule_id})", datetime(2026, 1, 1, tzinfo=UTC))


def ctx(book: Book, principal: Principal) -> Any:
    return SimpleNamespace(principal=principal, services=SimpleNamespace(permissions=book))


ALICE = Principal(id="user:alice", admin=False, user="alice")
ADMIN = Principal(id="owner", admin=True)


async def test_a_principal_sees_and_deletes_only_its_own() -> None:
    book = Book(rule("rule_a", "user:alice"), rule("rule_b", "user:bob"), rule("rule_c", "user:alice", "coder"))
    listed = await list_rules(ctx(book, ALICE), ListParams())
    assert [r["ruleId"] for r in listed["rules"]] == ["rule_a", "rule_c"]
    assert listed["rules"][0]["createdAt"] == "2026-01-01T00:00:00.000Z"
    only_coder = await list_rules(ctx(book, ALICE), ListParams(agent_alias="coder"))
    assert [r["ruleId"] for r in only_coder["rules"]] == ["rule_c"]
    with pytest.raises(InvalidParams):
        await delete_rule(ctx(book, ALICE), DeleteParams(rule_id="rule_b"))  # bob's: unknown to alice
    assert "rule_b" in book.rules
    assert await delete_rule(ctx(book, ALICE), DeleteParams(rule_id="rule_a")) == {"ruleId": "rule_a", "deleted": True}
    with pytest.raises(InvalidParams):
        await delete_rule(ctx(book, ALICE), DeleteParams(rule_id="rule_a"))  # gone


async def test_an_admin_sees_and_deletes_everyones() -> None:
    book = Book(rule("rule_a", "user:alice"), rule("rule_b", "user:bob"))
    assert len((await list_rules(ctx(book, ADMIN), ListParams()))["rules"]) == 2
    assert (await delete_rule(ctx(book, ADMIN), DeleteParams(rule_id="rule_b")))["deleted"] is True
