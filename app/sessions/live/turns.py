"""A live session's turns (SPEC §7, R-SES-2): start one, answer its approvals, cancel it, and end it in storage.

The session to run on comes from the lifecycle (`find`: live, else rehydrated); this module only runs turns on it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from app.agents.base import PromptingClient, Tool, ToolContext
from app.agents.mcp import McpHub, TurnTools
from app.agents.permissions import Pattern, Rule, RuleBook, RuleSet, parse_pattern, rules_from_lists
from app.agents.sandbox import Sandbox, SandboxHost
from app.agents.sandbox.limits import Limits
from app.agents.tools import build_tools
from app.auth.policy import Principal
from app.config.schema import Agent, Config
from app.sessions.errors import ApprovalNotFound, PromptTooLong, SessionBusy, UnknownAgent
from app.sessions.live.provider import SessionProvider
from app.sessions.live.session import Approval, LiveSession
from app.sessions.live.sink import UpdateSink
from app.sessions.live.steer import SteerInbox
from app.sessions.live.trim import trim_context
from app.sessions.live.turn import TurnOutcome, run_turn
from app.sessions.live.turn_settings import TurnSettings
from app.sessions.live.updates import TurnUpdates
from app.sessions.live.usage import UsageMeter, UsageObserver
from app.sessions.mode import SessionMode
from app.sessions.store.types import UsageRecord
from app.storage.errors import is_storage_unavailable
from app.telemetry import NOOP_TRACER, Tracer

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.events import SessionEvent, TurnComplete
    from app.sessions.store.session_store import SessionStore

__all__ = ["Turns"]

log = logging.getLogger("zeroclaw.sessions")


class Turns:
    """Runs turns on live sessions: one at a time per session (R-SES-2), numbered and sent to every watcher
    (`TurnUpdates`), ended in storage and trimmed (R-ACP-1, R-MULTI-5) whatever stopped them."""

    def __init__(
        self,
        store: SessionStore,
        config: Callable[[], Config],
        find: Callable[[Principal, str], Awaitable[LiveSession]],
        owned: Callable[[Principal, str], LiveSession],
        encode: Callable[[Sequence[SessionEvent]], list[bytes]] | None = None,
        rule_book: RuleBook | None = None,
        sandbox: SandboxHost | None = None,
    ) -> None:
        """`find`: the caller's session, brought to life if it is only stored; `owned`: the caller's live one;
        `rule_book`: the remembered permission rules (R-GUARD-3), None in tests that need none."""
        self.rule_book = rule_book
        self.sandbox = sandbox  # what `bash` runs under (R-GUARD-4); None: unsandboxed (tests)
        self._store = store
        self._config = config
        self._find = find
        self._owned = owned
        self._encode = encode
        self.observe_usage: UsageObserver | None = None  # the daemon's counters (`GET /metrics`, R-MODEL-5)
        self.tracer: Tracer = NOOP_TRACER  # R-MODEL-6: the daemon sets OpenTelemetry's when traces are on
        self.mcp = McpHub(config)  # R-MCP: the MCP servers' connections (the SDK is imported on first use)

    def check_prompt(self, text: str, field: str = "prompt") -> None:
        """R-LIM: a prompt as typed is at most `[limits] max_prompt_chars` long, on every surface. Checked before
        attachments add their markers, so a prompt at the limit may still carry files."""
        limit = self._config().limits.max_prompt_chars
        if len(text) > limit:
            raise PromptTooLong(limit, field)

    async def prompt(
        self,
        principal: Principal,
        session_id: str,
        text: str,
        *,
        sink: UpdateSink | None,
        client: PromptingClient,
    ) -> TurnOutcome:
        live = await self._find(principal, session_id)
        if live.busy:
            raise SessionBusy
        outcome = TurnOutcome(turn_id=f"t_{uuid.uuid4().hex[:16]}")
        live.turn_start_seq = live.seq  # R-MULTI-2: `session/attach` shows a running turn from here
        live.steers = inbox = SteerInbox()  # R-BRANCH-3: steers offered from now on join this turn
        live.turn = asyncio.get_running_loop().create_task(self._turn(live, text, outcome, sink, client))
        live.turn.add_done_callback(lambda _: inbox.close())  # also when the turn failed before its body ran
        return await asyncio.shield(live.turn)

    def cancel(self, principal: Principal, session_id: str) -> None:
        live = self._owned(principal, session_id)
        if live.busy and live.body is not None:
            live.cancel_cause = "client_rpc"
            live.body.cancel()

    def approve(
        self,
        principal: Principal,
        session_id: str,
        request_id: str,
        decision: str,
        replacement: str | None = None,
        *,
        remember: str | None = None,
        pattern: str | None = None,
    ) -> bool:
        """Answer an `approval_request`; `replacement` (with `reject_with_edit`) is what the user wants instead;
        `remember="agent"` with `allow_always` stores an allow rule (`pattern`, else the exact call) for the
        session's owner and agent (R-GUARD-3). The first answer wins (R-MULTI-3): False for one that comes after
        the request was settled (answered, timed out, or its turn ended); ApprovalNotFound for an id the session
        never gave. ValueError for a `pattern` that is not one."""
        if pattern is not None:
            pattern = parse_pattern(pattern).text
        live = self._owned(principal, session_id)
        pending = live.approvals.get(request_id)
        if pending is None or pending.done():
            if live.was_asked(request_id):
                return False
            raise ApprovalNotFound
        remembered = remember if decision == "allow_always" else None
        pending.set_result(
            Approval(decision, replacement if decision == "reject_with_edit" else None, remembered, pattern)
        )
        return True

    async def _turn(
        self, live: LiveSession, text: str, outcome: TurnOutcome, sink: UpdateSink | None, client: PromptingClient
    ) -> TurnOutcome:
        config = self._config()
        trace = self.tracer.begin_turn(session_id=live.session_id, agent=live.agent_alias, turn_id=outcome.turn_id)
        agent = config.agents[live.agent_alias]
        updates = TurnUpdates(live, sink, partial(self._reserve_seq, live), self._encode)
        tools: Mapping[str, Tool] = build_tools([t for t in agent.tools])
        before_step: Callable[[], Awaitable[None]] | None = None
        if agent.mcp_servers or live.mcp_servers:  # R-MCP-3: started on first use, listed again every step
            offered = TurnTools(tools, self.mcp, agent.mcp_servers, live.mcp_servers, live.session_id)
            await offered.refresh(start=True)
            tools, before_step = offered, offered.refresh
        settings = _turn_settings(config, agent, live, client, await self._rules(config, live), self.rule_book)
        if self.sandbox is not None:
            tool_context = dataclasses.replace(settings.tool_context, sandbox=_sandbox(self.sandbox, config))
            settings = dataclasses.replace(settings, tool_context=tool_context)
        provider_config = config.providers.get(agent.provider)
        if live.mode == SessionMode.CHAT:
            # R-MULTI-5: the provider is never sent more than the budget, also on the first turn of a chat
            # stored before migration 0006 (no snapshot yet); the context read is cached for the turn.
            await self._maybe_trim(live, updates, config, prompt=text)
        context = (await self._store.transcript.context(live.session_id, surface=live.surface, mode=live.mode)).messages
        outcome.usage = await self._meter(live, agent, provider_config)
        body = asyncio.get_running_loop().create_task(
            run_turn(
                live,
                text,
                turn_id=outcome.turn_id,
                context=context,
                provider=SessionProvider(live, agent, provider_config) if provider_config else _missing(agent),
                tools=tools,
                before_step=before_step,
                store=self._store.transcript,
                updates=updates,
                settings=settings,
                outcome=outcome,
            )
        )
        live.body, live.cancel_cause = body, None
        try:
            await asyncio.wait({body})
        finally:
            live.steers.close()  # R-BRANCH-3: a steer not taken by now answers accepted:false
        # Let go of the ended body: a cancelled one's exception holds `live` in a cycle (docs/limits.md).
        live.body = None
        storage_fault = _settle(body, outcome)
        trace.end(outcome.stop_reason)
        await self._end_turn(live, outcome, updates, config, storage_fault)
        if storage_fault is not None:
            raise storage_fault
        return outcome

    async def announce(self, live: LiveSession, event: SessionEvent) -> None:
        """An update outside a turn (`config_changed`, R-MODEL-4): numbered and sent to every follower."""
        await TurnUpdates(live, None, partial(self._reserve_seq, live), self._encode).emit(event)

    async def _rules(self, config: Config, live: LiveSession) -> RuleSet:
        """R-GUARD-1: `[permissions]`, the agent's, its `auto_approve` and the rules remembered for this owner."""
        agent = config.agents[live.agent_alias]
        rules = rules_from_lists(_lists(config.permissions), "[permissions]")
        rules += rules_from_lists(_lists(agent.permissions), f"[agents.{live.agent_alias}.permissions]")
        rules += [Rule("allow", pattern, "auto_approve") for pattern in _whole_tools(agent.auto_approve)]
        if self.rule_book is not None:
            rules += [stored.rule() for stored in await self.rule_book.list(live.owner, live.agent_alias)]
        return RuleSet(rules)

    async def _reserve_seq(self, live: LiveSession, up_to: int) -> None:
        """Store that seqs up to `up_to` may be used, before any of them is sent: a crash then skips the unsent
        ones and never numbers an update twice. On a storage fault the updates still go out (they matter more
        than their numbers' survival of a crash now); it is logged."""
        try:
            await self._store.store_seq(live.session_id, up_to, mode=live.mode)
        except Exception:
            log.warning("could not store a session's update numbers; a crash now may repeat some", exc_info=True)
        live.seq_reserved = up_to

    async def _end_turn(
        self,
        live: LiveSession,
        outcome: TurnOutcome,
        updates: TurnUpdates,
        config: Config,
        storage_fault: BaseException | None,
    ) -> None:
        """Close the turn in storage and trim its context; `turn_complete` is sent whatever happens."""
        try:
            try:
                await self._store.transcript.finish_turn(
                    live.session_id, outcome.turn_id, outcome.stop_reason, mode=live.mode, usage=_usage_record(outcome)
                )
            except Exception as exc:
                if storage_fault is None or not is_storage_unavailable(exc):
                    raise
                # The same fault again: the turn stays open in storage, recovered like an interrupted one.
            else:
                if outcome.usage is not None:
                    live.usage_cost = outcome.usage.session_cost
                await self._maybe_trim(live, updates, config)
        finally:
            complete: TurnComplete = {
                "session_id": live.session_id,
                "type": "turn_complete",
                "stop_reason": outcome.stop_reason,
                "content": outcome.content,
            }
            if outcome.usage is not None:
                complete["usage"] = outcome.usage.total()  # R-MODEL-5: the turn's steps summed
            await updates.emit(complete)

    async def _meter(self, live: LiveSession, agent: Agent, provider_config: Any) -> UsageMeter:
        """The turn's usage meter (R-MODEL-5), knowing what the session's earlier turns cost (read once per live
        session: ACP's `usage_update` shows the session's running cost)."""
        if not live.usage_cost_read:
            try:
                costs = [turn.cost_usd for turn in await self._store.usage.turns(live.session_id, mode=live.mode)]
            except Exception:
                log.warning("could not read what a session's turns cost", exc_info=True)
            else:
                priced = [cost for cost in costs if cost is not None]
                live.usage_cost, live.usage_cost_read = (sum(priced) if priced else None), True
        model = live.model or agent.model or (provider_config.model if provider_config is not None else None)
        pricing = provider_config.pricing if provider_config is not None else None
        return UsageMeter(agent.provider, model, pricing, session_cost=live.usage_cost, observer=self.observe_usage)

    async def _maybe_trim(
        self, live: LiveSession, updates: TurnUpdates, config: Config, prompt: str | None = None
    ) -> None:
        """Trim the retained context when it is over `[context]`, in either mode (R-ACP-1, R-MULTI-5). Given the
        turn's `prompt` (before the turn): when the context plus that prompt would be; the prompt is not stored."""
        store = self._store
        recovered = await store.transcript.context(live.session_id, surface=live.surface, mode=live.mode)
        pending = [] if prompt is None else [{"role": "user", "content": prompt}]
        limits = config.context
        trimmed = trim_context([*recovered.messages, *pending], limits.max_messages, limits.max_chars)
        if trimmed is None:
            return
        kept = trimmed.kept[: len(trimmed.kept) - len(pending)]
        try:
            await store.transcript.save_snapshot(
                live.session_id, kept, recovered.covers, surface=live.surface, mode=live.mode
            )
        except Exception:
            # R-ACP-2: no notification unless the snapshot and its boundary were committed together.
            log.warning("could not save a trimmed context snapshot; keeping the previous one", exc_info=True)
            return
        await updates.emit(
            {
                "session_id": live.session_id,
                "type": "history_trimmed",
                "dropped_messages": trimmed.dropped,
                "kept_messages": len(kept),
                "checkpoint": recovered.covers,
                "kept_turns": sum(1 for message in kept if message.get("role") == "user"),
                "reason": trimmed.reason,
            }
        )


def _sandbox(host: SandboxHost, config: Config) -> Sandbox:
    bash = config.tools.bash
    limits = Limits(bash.max_processes, bash.max_memory_bytes, bash.max_file_bytes, bash.max_cpu_secs)
    return host.sandbox(bash.sandbox, bash.sandbox_policy, limits)


def _whole_tools(names: Sequence[str]) -> list[Pattern]:
    out: list[Pattern] = []
    for name in names:
        try:
            out.append(parse_pattern(name))
        except ValueError:
            log.warning("auto_approve names %r, which is not a tool name; ignored", name)
    return out


def _lists(permissions: Any) -> dict[str, list[str]]:
    return {"allow": permissions.allow, "ask": permissions.ask, "deny": permissions.deny}


def _usage_record(outcome: TurnOutcome) -> UsageRecord | None:
    """What the turn cost, to store with its end (R-MODEL-5); None for a turn that never heard from its provider."""
    meter = outcome.usage
    if meter is None or meter.steps == 0:
        return None
    return UsageRecord(
        outcome.turn_id, meter.provider, meter.model, meter.steps, meter.input, meter.output, meter.cache_read,
        meter.cache_write, meter.cost,
    )  # fmt: skip


def _turn_settings(
    config: Config,
    agent: Agent,
    live: LiveSession,
    client: PromptingClient,
    rules: RuleSet | None = None,
    rule_book: RuleBook | None = None,
) -> TurnSettings:
    return TurnSettings(
        max_steps=agent.max_turn_steps,
        system_prompt=agent.system_prompt,
        auto_approve=frozenset(agent.auto_approve),
        approval_timeout_secs=config.tools.approval_timeout_secs,
        tool_context=ToolContext(
            session_id=live.session_id,
            workspace=live.workspace,
            client=client,
            bash_timeout_secs=config.tools.bash_timeout_secs,
            ask_timeout_secs=config.tools.ask_timeout_secs,
            output_limit_bytes=config.tools.output_limit_bytes,
            env=live.tool_env,
        ),
        rules=rules,
        rule_book=rule_book,
    )


def _settle(body: asyncio.Task[TurnOutcome], outcome: TurnOutcome) -> BaseException | None:
    """How the ended body stopped, into `outcome`; returns the storage fault the prompt must answer with."""
    storage_fault: BaseException | None = None
    if body.cancelled():
        outcome.stop_reason = "cancelled"
    elif (failure := body.exception()) is not None:
        outcome.stop_reason = "failed"
        if is_storage_unavailable(failure):
            # R-STORE-3: the prompt answers -32603 storage_unavailable, not a turn that merely failed; the live
            # session stays, and what was committed before the fault stays as it was.
            storage_fault = failure
            outcome.streamed.append("The turn stopped: the database cannot be written right now.")
        else:
            log.error("turn failed on session", exc_info=failure)
            outcome.streamed.append("The turn failed because of an internal error.")
    outcome.content = "".join(outcome.streamed)
    return storage_fault


def _missing(agent: Any) -> Any:
    raise UnknownAgent(f"The agent's provider {agent.provider!r} is not configured")
