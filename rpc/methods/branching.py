"""`session/fork`, `session/rollback` and `session/steer` (R-BRANCH-1..3): thin adapters over
`app.sessions.branching.SessionBranching`."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, UnsetType

from rpc.core import answers
from rpc.core.context import CallContext
from rpc.core.registry import Contract, Registry
from rpc.methods.session import SessionParams

__all__ = [
    "ForkParams",
    "Forked",
    "RollbackParams",
    "RolledBack",
    "SteerParams",
    "Steered",
    "fork_answer",
    "register",
]


class ForkParams(SessionParams, frozen=True):
    # The index of a user prompt row: the child has the rows before it. Absent: every row of finished turns.
    at_index: Annotated[int, Meta(ge=0, le=2**63 - 1)] | None = None


class Forked(answers.Answer, frozen=True):
    """The new session (the caller's): `forkedAt` is the parent's index it was forked at, its row count."""

    session_id: str
    parent_id: str
    forked_at: Annotated[int, Meta(ge=0)]
    message_count: Annotated[int, Meta(ge=0)]


class RollbackParams(SessionParams, frozen=True):
    turns: Annotated[int, Meta(ge=1, le=2**31 - 1)]  # at most the completed turns: checked against the session


class RolledBack(answers.Answer, frozen=True):
    """The turns dropped, their first row's index, and the `marker:"rolled_back"` row's."""

    session_id: str
    turns: Annotated[int, Meta(ge=1)]
    from_index: Annotated[int, Meta(ge=0)]
    marker_index: Annotated[int, Meta(ge=0)]


class SteerParams(SessionParams, frozen=True):
    prompt: str  # at most `[limits] max_prompt_chars`, as a prompt: checked by the handler


class Steered(answers.Answer, frozen=True):
    """`accepted`: the text joined the running turn, as the user row `index`; false: the turn ended first (prompt)."""

    accepted: bool
    index: Annotated[int, Meta(ge=0)] | UnsetType = UNSET


def register(registry: Registry) -> None:
    forked = Contract(
        "Fork a session at a prompt (or after its last finished turn) into a new session of the caller's",
        Forked,
        ("session_not_found", "session_not_owned"),
        storage=True,
    )
    registry.method("session/fork", params=ForkParams, grant="sessions:create", contract=forked)(fork)
    rolled = Contract(
        "Drop the last turns from what the model is given and session/messages shows (kept, marked), announced as "
        "rolled_back",
        RolledBack,
        ("session_not_found", "session_not_owned", "session_busy"),
        ("session/update",),
        storage=True,
    )
    registry.method("session/rollback", params=RollbackParams, grant="sessions:execute", contract=rolled)(rollback)
    steered = Contract(
        "Add a user message to the running turn, given to the model at its next provider step and stored there; "
        "announced as user_message (no running turn: invalid params)",
        Steered,
        ("session_not_found", "session_not_owned"),
        ("session/update",),
        storage=True,
    )
    registry.method("session/steer", params=SteerParams, grant="sessions:execute", contract=steered)(steer)


async def fork(ctx: CallContext, params: ForkParams) -> dict[str, Any]:
    done = await ctx.services.sessions.branching.fork(ctx.principal, params.session_id, params.at_index)
    return fork_answer(params.session_id, done.record.session_id, done.forked_at)


def fork_answer(parent_id: str, child_id: str, forked_at: int) -> dict[str, Any]:
    """`session/fork`'s answer (also the REST route's and ACP's)."""
    return {"sessionId": child_id, "parentId": parent_id, "forkedAt": forked_at, "messageCount": forked_at}


async def rollback(ctx: CallContext, params: RollbackParams) -> dict[str, Any]:
    done = await ctx.services.sessions.branching.rollback(ctx.principal, params.session_id, params.turns)
    return {
        "sessionId": params.session_id,
        "turns": done.turns,
        "fromIndex": done.from_index,
        "markerIndex": done.marker_index,
    }


async def steer(ctx: CallContext, params: SteerParams) -> dict[str, Any]:
    ctx.services.sessions.turns.check_prompt(params.prompt)
    index = await ctx.services.sessions.branching.steer(ctx.principal, params.session_id, params.prompt)
    return {"accepted": False} if index is None else {"accepted": True, "index": index}
