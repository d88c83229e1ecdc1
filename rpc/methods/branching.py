"""`session/fork` (R-BRANCH-1): thin adapters over `app.sessions.branching.SessionBranching`."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from rpc.core import answers
from rpc.core.context import CallContext
from rpc.core.registry import Contract, Registry
from rpc.methods.session import SessionParams

__all__ = ["ForkParams", "Forked", "fork_answer", "register"]


class ForkParams(SessionParams, frozen=True):
    # The index of a user prompt row: the child has the rows before it. Absent: every row of finished turns.
    at_index: Annotated[int, Meta(ge=0, le=2**63 - 1)] | None = None


class Forked(answers.Answer, frozen=True):
    """The new session (the caller's): `forkedAt` is the parent's index it was forked at, its row count."""

    session_id: str
    parent_id: str
    forked_at: Annotated[int, Meta(ge=0)]
    message_count: Annotated[int, Meta(ge=0)]


def register(registry: Registry) -> None:
    forked = Contract(
        "Fork a session at a prompt (or after its last finished turn) into a new session of the caller's",
        Forked,
        ("session_not_found", "session_not_owned"),
        storage=True,
    )
    registry.method("session/fork", params=ForkParams, grant="sessions:create", contract=forked)(fork)


async def fork(ctx: CallContext, params: ForkParams) -> dict[str, Any]:
    done = await ctx.services.sessions.branching.fork(ctx.principal, params.session_id, params.at_index)
    return fork_answer(params.session_id, done.record.session_id, done.forked_at)


def fork_answer(parent_id: str, child_id: str, forked_at: int) -> dict[str, Any]:
    """`session/fork`'s answer (also the REST route's and ACP's)."""
    return {"sessionId": child_id, "parentId": parent_id, "forkedAt": forked_at, "messageCount": forked_at}
