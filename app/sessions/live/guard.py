"""A tool call's way past the rules and the user (R-GUARD-1..3, R-STREAM-3, R-MULTI-3): deny > ask > allow > the
tool's default; an `approval_request` when the answer is "ask", settled by the first answer or the timeout; the
answers that are remembered (`allow_always`, `reject_always`, for the session or the agent)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING

from app.agents.base import Tool, ToolCall, ToolContext
from app.agents.permissions import Decision, Verdict, exact_pattern, parse_pattern
from app.sessions.live.session import Approval, LiveSession
from app.storage.errors import is_storage_unavailable

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent, ToolProgressEvent
    from app.sessions.live.turn_settings import TurnSettings, Updates

__all__ = ["guarded_run"]

log = logging.getLogger("zeroclaw.sessions")

_TIMED_OUT = Approval("reject")


def _verdict(live: LiveSession, call: ToolCall, tool: Tool, settings: TurnSettings) -> Verdict:
    """What the rules say about this call (R-GUARD-1): deny > ask > allow > the tool's default, where this
    session's `allow_always` answers count as allow rules and `auto_approve` lists whole tools."""
    default: Decision = "ask" if tool.needs_approval else "allow"
    rules = settings.rules
    if rules is None:
        verdict = Verdict("allow" if call.name in settings.auto_approve else default)
    else:
        verdict = rules.evaluate(call.name, call.arguments, default=default, workspace=settings.tool_context.workspace)
    if verdict.decision == "ask" and verdict.rule is None and call.name in live.always_allowed:
        return Verdict("allow")
    return verdict


async def guarded_run(live: LiveSession, call: ToolCall, tool: Tool, updates: Updates, settings: TurnSettings) -> str:
    """Run the call if the rules or the user allow it; else the tool result that says why not (R-GUARD-2)."""
    verdict = _verdict(live, call, tool, settings)
    if verdict.decision == "deny":
        return verdict.denial(call.name)
    if call.name in live.always_rejected:
        return f"The user rejected every {call.name} call for the rest of this session; this one was not run."
    if verdict.decision == "allow":
        return await tool.run(call.arguments, _context(live, call, updates, settings))
    approval = await _approval(live, call, updates, settings)
    if approval.decision in ("allow_once", "allow_always"):
        return await tool.run(call.arguments, _context(live, call, updates, settings))
    if approval.replacement is not None:
        result = f"The user rejected this {call.name} call; it was not run. They asked for this instead:\n"
        return result + approval.replacement
    return f"The user rejected this {call.name} call; it was not run."


def _context(live: LiveSession, call: ToolCall, updates: Updates, settings: TurnSettings) -> ToolContext:
    """The call's context: the turn's, with its progress sent as `tool_progress` (R-MCP-3)."""

    async def progress(value: float, total: float | None, message: str | None) -> None:
        event: ToolProgressEvent = {
            "session_id": live.session_id,
            "type": "tool_progress",
            "tool_call_id": call.id,
            "progress": value,
            "total": total,
            "message": message,
        }
        await updates.emit(event)

    return dataclasses.replace(settings.tool_context, progress=progress)


async def _approval(live: LiveSession, call: ToolCall, updates: Updates, settings: TurnSettings) -> Approval:
    request_id = live.next_request_id()
    decision: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
    live.approvals[request_id] = decision
    try:
        await updates.emit(
            {
                "session_id": live.session_id,
                "type": "approval_request",
                "request_id": request_id,
                "tool_name": call.name,
                "arguments": call.arguments,
                "timeout_secs": settings.approval_timeout_secs,
            }
        )
        try:
            answer = await asyncio.wait_for(decision, settings.approval_timeout_secs)
        except TimeoutError:
            answer = _TIMED_OUT  # no answer in time = reject (R-STREAM-3)
    finally:
        live.approvals.pop(request_id, None)
    # R-MULTI-3: every attached client learns it is settled (the first answer won), so none
    # keeps asking.
    resolved: SessionEvent = {
        "session_id": live.session_id,
        "type": "approval_resolved",
        "request_id": request_id,
        "decision": answer.decision,
    }
    await updates.emit(resolved)
    await _remember(live, call, answer, settings)
    return answer


async def _remember(live: LiveSession, call: ToolCall, answer: Approval, settings: TurnSettings) -> None:
    """R-GUARD-3: `allow_always` for this session (the tool) or, with `remember:"agent"`, as a stored allow rule for
    the owner and agent; `reject_always` for this session."""
    if answer.decision == "reject_always":
        live.always_rejected.add(call.name)
    elif answer.decision != "allow_always":
        return
    elif answer.remember == "agent" and settings.rule_book is not None:
        # A caller's pattern must be about this call's tool: an approval of `bash` does not write `write_file` rules.
        given = answer.pattern if answer.pattern and parse_pattern(answer.pattern).matches_tool(call.name) else None
        pattern = given or exact_pattern(call.name, call.arguments)
        try:
            stored = await settings.rule_book.add(live.owner, live.agent_alias, "allow", pattern)
        except Exception as exc:
            if not is_storage_unavailable(exc):
                raise
            # R-STORE-3: the database refuses writes now; this call still runs (the user allowed it), unremembered.
            log.warning("could not store the permission rule %r; this call runs, the rule is not kept", pattern)
            return
        if settings.rules is not None:
            settings.rules.add(stored.rule())  # later calls of this turn see it too
    else:
        live.always_allowed.add(call.name)
