"""Approvals: the daemon asks with an `approval_request` update of `session/update`, and the client answers with
`session/approve` (docs/protocol.md). `answer_approvals` joins the two behind one typed handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ._generated import ApprovalRequestUpdate, SessionApproveParamsDecision, SessionUpdateParams, ZeroclawClient

__all__ = ["answer_approvals"]


def answer_approvals(
    client: ZeroclawClient, decide: Callable[[ApprovalRequestUpdate], Awaitable[SessionApproveParamsDecision]]
) -> None:
    """Answer every approval request on `client`'s sessions with `decide`'s decision."""

    async def answer(update: ApprovalRequestUpdate) -> None:
        decision = await decide(update)
        await client.session_approve(session_id=update["sessionId"], request_id=update["requestId"], decision=decision)

    def on_update(update: SessionUpdateParams) -> Awaitable[None] | None:
        return answer(update) if update["type"] == "approval_request" else None

    client.on_session_update(on_update)
