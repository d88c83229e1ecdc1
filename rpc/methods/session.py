"""`session/*` (SPEC §7.1): thin adapters over `app.sessions.registry.SessionRegistry`."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from msgspec.structs import replace

from app.sessions import errors as domain
from app.sessions.list_pages import MAX_LIMIT
from app.sessions.mode import SessionMode
from app.sessions.views import SessionInfo, SessionSummary
from app.storage.timestamps import iso_z
from rpc.core import answers
from rpc.core.answers import TRUE, DateTime, wire_model
from rpc.core.context import CallContext
from rpc.core.errors import (
    InternalError,
    InvalidParams,
    RpcError,
    SessionBusy,
    SessionLimit,
    SessionNotFound,
    SessionNotOwned,
    error_mapper,
)
from rpc.core.registry import AfterReply, Contract, Params, Registry, SessionId
from rpc.core.session_bridge import Elicitor, sink_for
from rpc.methods import mcp

if TYPE_CHECKING:
    from app.files.service import FileService
    from app.services import Services
    from app.sessions.list_pages import ListQuery, Position
    from app.sessions.store.types import TranscriptRow, TurnCost
    from app.sessions.views import SessionPage

__all__ = [
    "MessageRow",
    "Messages",
    "PromptResult",
    "SessionId",
    "SessionList",
    "SessionRow",
    "files_of",
    "map_session_error",
    "message_row",
    "register",
    "turn_usage",
    "usage_total",
]

Mode = Literal["acp", "chat"]
Answer = dict[str, Any]


class NewParams(Params, frozen=True):
    agent_alias: Annotated[str, Meta(min_length=1, max_length=64)] = "default"
    cwd: Annotated[str, Meta(max_length=4096)] | None = None
    session_id: SessionId | None = None
    # `chat_mode` is ZeroClaw's name for it, accepted from any client (R-WIRE-8).
    mode: Mode = "acp"
    # A terminal that handed over its environment at `initialize` (R-ZC-6): its commands run with it.
    tui_id: Annotated[str, Meta(max_length=64)] | None = None
    mcp_servers: list[Any] | None = None  # R-MCP-2: this session's own MCP servers (ACP's shapes)

    also_spelled: ClassVar[Mapping[str, tuple[str, ...]]] = {"mode": ("mode", "chat_mode", "chatMode")}


class SessionParams(Params, frozen=True):
    session_id: SessionId


class PromptParams(SessionParams, frozen=True):
    prompt: str  # at most `[limits] max_prompt_chars`: checked by the handler against the config in force
    attachments: list[dict[str, Any]] | None = None


class ApproveParams(SessionParams, frozen=True):
    request_id: Annotated[str, Meta(min_length=1, max_length=64)]
    decision: Literal["allow_once", "allow_always", "reject", "reject_always"]
    # R-GUARD-3: with `allow_always`, "agent" stores an allow rule for the owner and the session's agent, of
    # `pattern` (`bash(git status*)`) when given, else of the exact command or path; "session" (default) as before.
    remember: Literal["session", "agent"] | None = None
    pattern: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None


class ListParams(Params, frozen=True):
    include_killed: bool = False
    mode: Mode | None = None  # only sessions of this mode
    # R-MULTI-4: a page of at most `limit`, after the page `cursor` came with;
    # titles containing `query`.
    limit: Annotated[int, Meta(ge=1, le=MAX_LIMIT)] = MAX_LIMIT
    cursor: Annotated[str, Meta(min_length=1, max_length=1024)] | None = None
    query: Annotated[str, Meta(max_length=256)] | None = None


class AttachParams(SessionParams, frozen=True):
    # R-MULTI-2: replay the retained updates numbered after this one first (a seq this client was sent).
    after_seq: Annotated[int, Meta(ge=0, le=2**63 - 1)] | None = None


class MessagesParams(SessionParams, frozen=True):
    limit: Annotated[int, Meta(ge=0, le=10_000)] = 100
    # SQLite integers are 64-bit; `before_index` is ZeroClaw's name for it.
    before: Annotated[int, Meta(ge=0, le=2**63 - 1)] | None = None
    # Opt-in (issue 29 §4.9): `turnEnds` only when asked; the default answer stays the contract's.
    turn_ends: bool = False
    include_rolled_back: bool = False  # R-BRANCH-2: show the rows session/rollback dropped too

    also_spelled: ClassVar[Mapping[str, tuple[str, ...]]] = {"before": ("before", "before_index", "beforeIndex")}


# -- results


SessionOpened = wire_model(SessionInfo, name="SessionOpened", doc="A session opened, attached to or resumed.")
SessionRow = wire_model(SessionSummary, name="SessionRow", doc="One stored session.")


class SessionList(answers.Answer, frozen=True):
    """One page, newest activity first (R-MULTI-4); `nextCursor` asks for the next one, null on the last."""

    sessions: list[SessionRow]  # type: ignore[valid-type]
    next_cursor: str | None


class MessageRow(answers.Answer, frozen=True):
    """One transcript row; the three optional keys are absent (never null) when they do not apply."""

    index: int
    role: str
    content: str
    tool_call_id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    marker: str | UnsetType = UNSET


class TurnEnd(answers.Answer, frozen=True):
    index: int
    stop_reason: str


class Messages(answers.Answer, frozen=True):
    """A page of the visible transcript; `turnEnds` only when asked for (`turnEnds: true`)."""

    session_id: str
    messages: list[MessageRow]
    total: int
    turn_ends: list[TurnEnd] | UnsetType = UNSET


StopReason = Literal["end_turn", "cancelled", "failed", "max_turns"]


class PromptResult(answers.Answer, frozen=True):
    session_id: str
    stop_reason: StopReason
    content: str


class Cancelled(answers.Answer, frozen=True):
    session_id: str
    cancelled: TRUE  # also when no turn runs: cancelling is idempotent


class SessionAttached(answers.Answer, frozen=True):
    session_id: str
    seq: Annotated[int, Meta(ge=0)]  # the last update this connection has been sent (or would have been)
    replayed: Annotated[int, Meta(ge=0)]  # updates sent again, those after afterSeq, before this answer
    gap: bool  # some updates after afterSeq are no longer retained: read the transcript (session/messages)
    running: bool  # a turn runs now
    # R-MULTI-2: the seq just before the running turn's first update (null when idle): the `afterSeq` that shows
    # the turn from its start, whatever the numbering did before it (a restart jumps it)
    turn_start_seq: Annotated[int, Meta(ge=0)] | None
    pending_approvals: list[str]  # request ids of the approval_requests still waiting for an answer


class SessionDetached(answers.Answer, frozen=True):
    session_id: str
    detached: bool  # false when this connection was not following the session


class Approved(answers.Answer, frozen=True):
    session_id: str
    request_id: str
    acknowledged: bool


class UsageTotal(answers.Answer, frozen=True):
    """Tokens as the providers counted them; `costUsd` in USD from `[providers.<p>.pricing]`, null when unpriced."""

    input_tokens: Annotated[int, Meta(ge=0)]
    output_tokens: Annotated[int, Meta(ge=0)]
    cache_read_tokens: Annotated[int, Meta(ge=0)]
    cache_write_tokens: Annotated[int, Meta(ge=0)]
    cost_usd: float | None


class TurnUsage(UsageTotal, frozen=True):
    """One counted turn: its provider steps summed, on the provider alias and model it ran on."""

    index: Annotated[int, Meta(ge=0)]  # the session's counted turns, from 0
    turn_id: str
    provider: str
    model: str | None
    steps: Annotated[int, Meta(ge=1)]  # provider steps (one per model call)
    at: DateTime  # when the turn ended


class SessionUsage(answers.Answer, frozen=True):
    """What a session's turns cost (R-MODEL-5): the total, and each turn in order."""

    session_id: str
    total: UsageTotal
    turns: list[TurnUsage]


class Closed(answers.Answer, frozen=True):
    session_id: str
    closed: TRUE


class Killed(answers.Answer, frozen=True):
    session_id: str
    killed: TRUE


class Deleted(answers.Answer, frozen=True):
    session_id: str
    deleted: TRUE


SESSION_ERRORS = ("session_not_found", "session_changed", "session_not_owned")
UPDATES = ("session/update",)


def register(registry: Registry) -> None:
    c, method, s = Contract, registry.method, SESSION_ERRORS
    opened = c(
        "Open a session, or resume one by its id; this connection then watches it",
        SessionOpened,
        ("forbidden", "session_limit", *s),
        UPDATES,
        storage=True,
    )
    method("session/new", params=NewParams, grant="sessions:create", contract=opened)(new)
    prompted = c(
        "Run one turn; its progress streams as session/update, and it answers when the turn ends",
        PromptResult,
        ("forbidden", "session_limit", "session_busy", *s),
        UPDATES,
        ("elicitation/create",),
        storage=True,
    )
    method("session/prompt", params=PromptParams, grant="sessions:execute", contract=prompted)(prompt)
    cancelled = c("Cancel the running turn (a no-op when none runs)", Cancelled, s)
    method("session/cancel", params=SessionParams, grant="sessions:execute", contract=cancelled)(cancel)
    approved = c("Answer a tool's approval_request", Approved, s)
    method("session/approve", params=ApproveParams, grant="sessions:execute", contract=approved)(approve)
    attached = c(
        "Follow a session: the retained updates after afterSeq, then every live one, whoever prompts",
        SessionAttached,
        ("session_limit", *s),
        UPDATES,
        storage=True,
    )
    method("session/attach", params=AttachParams, grant="sessions:read", contract=attached)(attach)
    detached = c("Stop following a session", SessionDetached, ("session_not_owned",))
    method("session/detach", params=SessionParams, grant="sessions:read", contract=detached)(detach)
    listed = c("The caller's sessions (an admin's: everyone's)", SessionList, storage=True)
    method("session/list", params=ListParams, grant="sessions:read", contract=listed)(list_sessions)
    durable = c("The caller's ACP sessions", SessionList, storage=True)
    method("session/list-acp", params=ListParams, grant="sessions:read", contract=durable)(list_acp_sessions)
    page = c("A page of a session's visible transcript", Messages, s, storage=True)
    method("session/messages", params=MessagesParams, grant="sessions:read", contract=page)(messages)
    used = c("What a session's turns cost: tokens and USD per turn, and the total", SessionUsage, s, storage=True)
    method("session/usage", params=SessionParams, grant="sessions:read", contract=used)(usage)
    closed = c("Close a session: kept, resumable by session/new", Closed, s, storage=True)
    method("session/close", params=SessionParams, grant="sessions:update", contract=closed)(close)
    killed = c("Kill a session: stopped and no longer resumable", Killed, s, storage=True)
    method("session/kill", params=SessionParams, grant="sessions:delete", contract=killed)(kill)
    deleted = c("Delete a session and its transcript", Deleted, s, storage=True)
    method("session/delete", params=SessionParams, grant="sessions:delete", contract=deleted)(delete)


def _invalid(field: str, kind: str) -> Callable[[domain.SessionError], RpcError]:
    return lambda exc: InvalidParams(exc.message, errors=[_field(field, kind, exc.message)])


# One entry per concept of `app.sessions.errors`; `AgentNotAllowed` is config.py's `Forbidden`.
map_session_error = error_mapper(
    {
        domain.SessionNotFound: lambda exc: SessionNotFound(exc.message, kind=exc.kind),
        domain.SessionNotOwned: lambda exc: SessionNotOwned(exc.message),
        domain.SessionLimit: lambda exc: SessionLimit(exc.message),
        domain.SessionBusy: lambda exc: SessionBusy(exc.message),
        domain.UnknownAgent: _invalid("agentAlias", "unknown_agent"),
        domain.BadWorkspace: _invalid("cwd", "bad_workspace"),
        domain.ApprovalNotFound: _invalid("requestId", "unknown_request"),
        domain.BadCursor: _invalid("cursor", "bad_cursor"),
        domain.BadForkPoint: _invalid("atIndex", "bad_fork_point"),
        domain.BadRollback: _invalid("turns", "bad_rollback"),
        domain.NoRunningTurn: _invalid("sessionId", "no_running_turn"),
        domain.WrongSessionKind: lambda exc: InvalidParams(
            exc.message, errors=[_field("sessionId", exc.kind, exc.message)]
        ),
        domain.PromptTooLong: lambda exc: InvalidParams(
            errors=[_field(exc.field, "string_too_long", exc.message)], limit=exc.limit
        ),
    }
)


def _field(name: str, kind: str, message: str) -> dict[str, str]:
    return {"field": name, "type": kind, "message": message}


def files_of(services: Services) -> FileService:
    """The files service (made by its first use); a wiring without one answers `internal_error`, reason `wiring`."""
    files = services.file_service()
    if files is None:  # a wiring error, not the daemon's (it always has a factory)
        raise InternalError("The files service is not configured", reason="wiring")
    return files


async def new(ctx: CallContext, params: NewParams) -> AfterReply:
    principal = ctx.principal
    servers = mcp.session_servers(ctx, params.mcp_servers)  # refused (local_only) before anything is opened
    opened = await ctx.services.sessions.open(
        principal,
        agent_alias=params.agent_alias,
        cwd=params.cwd,
        session_id=params.session_id,
        mode=SessionMode(params.mode),
        surface="rpc",
        tool_env=ctx.daemon_view.tui_env(params.tui_id, principal.id) if params.tui_id is not None else None,
    )
    mcp.give_session_servers(ctx, opened.session.session_id, servers)
    # Watch only once the answer is queued, so no update of a running turn can overtake it (R-SES-3).
    return AfterReply(ctx.wire(opened.describe()), lambda: opened.session.watch(sink_for(ctx)))


async def prompt(ctx: CallContext, params: PromptParams) -> dict[str, Any]:
    ctx.services.sessions.turns.check_prompt(params.prompt)
    text = params.prompt
    if params.attachments:
        text = await files_of(ctx.services).prompt_with_attachments(
            ctx.principal, params.session_id, text, params.attachments
        )
    start = time.perf_counter()
    outcome = await ctx.services.sessions.turns.prompt(
        ctx.principal,
        params.session_id,
        text,
        sink=sink_for(ctx),
        client=Elicitor(ctx.client, params.session_id, ctx.services.sessions),
    )
    ctx.services.observations.turn_ended(outcome.stop_reason, time.perf_counter() - start)
    return {"sessionId": params.session_id, "stopReason": outcome.stop_reason, "content": outcome.content}


def cancel(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    ctx.services.sessions.turns.cancel(ctx.principal, params.session_id)
    return {"sessionId": params.session_id, "cancelled": True}


def approve(ctx: CallContext, params: ApproveParams) -> dict[str, Any]:
    # R-MULTI-3: `acknowledged:false` when another client's answer (or the timeout) settled it first.
    try:
        acknowledged = ctx.services.sessions.turns.approve(
            ctx.principal,
            params.session_id,
            params.request_id,
            params.decision,
            remember=params.remember,
            pattern=params.pattern,
        )
    except ValueError as exc:  # a `pattern` that is not one
        raise InvalidParams(
            "Invalid pattern", errors=[{"field": "pattern", "type": "invalid_pattern", "message": str(exc)}]
        ) from None
    return {"sessionId": params.session_id, "requestId": params.request_id, "acknowledged": acknowledged}


async def attach(ctx: CallContext, params: AttachParams) -> dict[str, Any]:
    """Follow a session from now on (R-MULTI-2): the retained updates after `afterSeq` first, in order, then
    every live one, none missed and none twice. Replaying waits while this client is slow; updates emitted
    meanwhile are replayed too, and the client starts watching only once nothing is left to replay, with no await
    in between (`app.sessions.live.updates` numbers, keeps and sends an update with none either)."""
    live = await ctx.services.sessions.attach(ctx.principal, params.session_id)
    after = params.after_seq
    if after is not None and after > live.seq:
        message = f"afterSeq is beyond the session's last update ({live.seq})"
        raise InvalidParams(message, errors=[_field("afterSeq", "seq_out_of_range", message)])
    replayed, gap, seq = 0, False, live.seq
    if ctx.client.one_shot:  # an HTTP caller is sent nothing: whatever came after `afterSeq` it has to read
        gap = after is not None and after < live.seq
    else:
        sink, sent = sink_for(ctx), after
        if after is not None:
            live.unwatch(sink)  # following already: the replay takes over from where it was asked to start
        while sent is not None:
            events = live.events_after(sent)
            if not events:  # caught up ([]), or the rest is no longer retained (None)
                gap, seq = events is None, live.seq if events is None else sent
                break
            await sink.send_updates(events)
            replayed, sent = replayed + len(events), events[-1]["seq"]
        live.watch(sink, after=seq)
    pending = [request_id for request_id, answer in live.approvals.items() if not answer.done()]
    result = {"sessionId": live.session_id, "seq": seq, "replayed": replayed, "gap": gap, "running": live.busy}
    turn_start = live.turn_start_seq if live.busy else None
    return {**result, "turnStartSeq": turn_start, "pendingApprovals": pending}


def detach(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    """Stop following a session: no more of its updates reach this client (unless it prompts a turn itself)."""
    detached = ctx.services.sessions.detach(ctx.principal, params.session_id, sink_for(ctx))
    return {"sessionId": params.session_id, "detached": detached}


def list_sessions(ctx: CallContext, params: ListParams) -> Answer | Coroutine[Any, Any, Answer]:
    """One page (R-MULTI-4). Answered inline while the store keeps the whole list in memory (a panel polls it),
    else read from the index as its own task."""
    sessions = ctx.services.sessions
    mode = None if params.mode is None else SessionMode(params.mode)
    query, after = sessions.reading.list_query(
        ctx.principal, include_killed=params.include_killed, mode=mode, query=params.query, cursor=params.cursor
    )
    page = sessions.reading.page_now(query, after, params.limit)
    return _read_list(ctx, query, after, params.limit) if page is None else _list_answer(ctx, page)


def list_acp_sessions(ctx: CallContext, params: ListParams) -> Answer | Coroutine[Any, Any, Answer]:
    """`session/list-acp`: the durable (ACP) sessions only, as ZeroClaw lists them apart (R-ZC-4)."""
    return list_sessions(ctx, replace(params, mode="acp"))


async def _read_list(ctx: CallContext, query: ListQuery, after: Position | None, limit: int) -> Answer:
    return _list_answer(ctx, await ctx.services.sessions.reading.list_page(query, after, limit))


def _list_answer(ctx: CallContext, page: SessionPage) -> Answer:
    return {"sessions": ctx.wire(page.sessions), "nextCursor": page.next_cursor}


async def messages(ctx: CallContext, params: MessagesParams) -> dict[str, Any]:
    if params.include_rolled_back:
        sessions, sid = ctx.services.sessions, params.session_id
        rows, total = await sessions.branching.messages_with_rolled_back(
            ctx.principal, sid, limit=params.limit, before=params.before
        )
        return {"sessionId": sid, "messages": [message_row(r) for r in rows], "total": total}
    rows, total, ends = await ctx.services.sessions.reading.messages(
        ctx.principal, params.session_id, limit=params.limit, before=params.before, turn_ends=params.turn_ends
    )
    shown = [message_row(r) for r in rows]
    result: dict[str, Any] = {"sessionId": params.session_id, "messages": shown, "total": total}
    if ends is not None:  # asked for: how each turn whose last row is in the page ended (docs/sessions.md)
        result["turnEnds"] = [{"index": end.index, "stopReason": end.stop_reason} for end in ends]
    return result


def message_row(row: TranscriptRow) -> dict[str, Any]:
    """One transcript row as `session/messages` shows it (also used by the REST route)."""
    out: dict[str, Any] = {"index": row.index, "role": row.role, "content": row.content}
    if row.tool_call_id is not None:
        out["toolCallId"] = row.tool_call_id
    if row.name is not None:
        out["name"] = row.name
    if row.marker is not None:
        out["marker"] = row.marker
    return out


async def usage(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    """What the session's turns cost (R-MODEL-5): each counted turn, and their total."""
    turns = await ctx.services.sessions.reading.usage(ctx.principal, params.session_id)
    return {"sessionId": params.session_id, "total": usage_total(turns), "turns": [turn_usage(t) for t in turns]}


def turn_usage(turn: TurnCost) -> dict[str, Any]:
    """One counted turn as `session/usage` shows it (also the REST route's)."""
    return {
        "index": turn.index,
        "turnId": turn.turn_id,
        "provider": turn.provider,
        "model": turn.model,
        "steps": turn.steps,
        "inputTokens": turn.input_tokens,
        "outputTokens": turn.output_tokens,
        "cacheReadTokens": turn.cache_read_tokens,
        "cacheWriteTokens": turn.cache_write_tokens,
        "costUsd": turn.cost_usd,
        "at": iso_z(turn.at),
    }


def usage_total(turns: list[TurnCost]) -> dict[str, Any]:
    """The turns summed; `costUsd` sums the priced ones, null when none was priced."""
    costs = [t.cost_usd for t in turns if t.cost_usd is not None]
    return {
        "inputTokens": sum(t.input_tokens for t in turns),
        "outputTokens": sum(t.output_tokens for t in turns),
        "cacheReadTokens": sum(t.cache_read_tokens for t in turns),
        "cacheWriteTokens": sum(t.cache_write_tokens for t in turns),
        "costUsd": sum(costs) if costs else None,
    }


async def close(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    await ctx.services.sessions.close(ctx.principal, params.session_id)
    return {"sessionId": params.session_id, "closed": True}


async def kill(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    await ctx.services.sessions.kill(ctx.principal, params.session_id)
    return {"sessionId": params.session_id, "killed": True}


async def delete(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    await ctx.services.sessions.delete(ctx.principal, params.session_id)
    return {"sessionId": params.session_id, "deleted": True}
