"""`permissions/list`, `permissions/delete` (R-GUARD-3): the permission rules remembered from `allow_always`
answers with `remember:"agent"`. A caller sees and deletes its own; an admin everyone's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from msgspec import Meta

from app.storage import iso_z
from rpc.core.answers import TRUE, Answer, DateTime
from rpc.core.context import CallContext
from rpc.core.errors import InternalError, InvalidParams
from rpc.core.registry import Contract, Params, Registry

if TYPE_CHECKING:
    from app.agents.permissions import RuleBook, StoredRule

__all__ = ["register"]


class ListParams(Params, frozen=True):
    agent_alias: Annotated[str, Meta(min_length=1, max_length=255)] | None = None


class DeleteParams(Params, frozen=True):
    rule_id: Annotated[str, Meta(min_length=1, max_length=64)]


class StoredRuleRow(Answer, frozen=True):
    rule_id: str
    principal: str
    agent_alias: str
    decision: str
    pattern: str
    created_at: DateTime


class RuleList(Answer, frozen=True):
    rules: list[StoredRuleRow]


class RuleDeleted(Answer, frozen=True):
    rule_id: str
    deleted: TRUE


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    listed = c("The remembered permission rules (an admin's: everyone's)", RuleList, storage=True)
    method("permissions/list", params=ListParams, grant="sessions:read", contract=listed)(list_rules)
    deleted = c("Delete a remembered permission rule", RuleDeleted, storage=True)
    method("permissions/delete", params=DeleteParams, grant="sessions:delete", contract=deleted)(delete_rule)


def _book(ctx: CallContext) -> RuleBook:
    book = ctx.services.permissions
    if book is None:
        raise InternalError("Permission rules are not stored by this daemon")
    return book


def _row(rule: StoredRule) -> dict[str, Any]:
    return {
        "ruleId": rule.rule_id,
        "principal": rule.principal,
        "agentAlias": rule.agent_alias,
        "decision": rule.decision,
        "pattern": rule.pattern,
        "createdAt": iso_z(rule.created_at),
    }


async def list_rules(ctx: CallContext, params: ListParams) -> dict[str, Any]:
    principal = ctx.principal
    rules = await _book(ctx).list(None if principal.admin else principal.id, params.agent_alias)
    return {"rules": [_row(r) for r in rules]}


async def delete_rule(ctx: CallContext, params: DeleteParams) -> dict[str, Any]:
    book, principal = _book(ctx), ctx.principal
    rule = await book.get(params.rule_id)
    # Unknown or another principal's: the same answer, so ids cannot be probed.
    if rule is None or not (principal.admin or rule.principal == principal.id) or not await book.delete(rule.rule_id):
        unknown = {"field": "ruleId", "type": "unknown_rule", "message": "no such rule"}
        raise InvalidParams("Unknown rule", errors=[unknown])
    return {"ruleId": rule.rule_id, "deleted": True}
