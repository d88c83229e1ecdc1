"""The session service: live sessions by id, their durable records, and the turn lifecycle (SPEC §7).

Ownership (R-SES-1), the live cap (`max_sessions`), busy turns (R-SES-2), resume/rehydrate (R-ACP-5, 8),
close/kill/delete ordering (R-ACP-8..11) live here, so every surface (RPC, REST, webhooks) shares them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.agents.base import PromptingClient, ToolContext
from app.agents.providers import build_provider
from app.agents.tools import build_tools
from app.auth.policy import Principal
from app.config.schema import Agent, Config
from app.sessions.errors import (
    AgentNotAllowed,
    ApprovalNotFound,
    BadWorkspace,
    PromptTooLong,
    SessionBusy,
    SessionClosed,
    SessionKilled,
    SessionLimit,
    SessionNotFound,
    SessionNotOwned,
    UnknownAgent,
    WrongSessionKind,
)
from app.sessions.keyed_lock import KeyedLock
from app.sessions.list_pages import ListQuery, Page, Position, decode_cursor, encode_cursor
from app.sessions.live import Approval, LiveSession, Mode, UpdateSink
from app.sessions.store_types import Surface
from app.sessions.trim import trim_context
from app.sessions.turn import TurnOutcome, TurnSettings, run_turn
from app.sessions.updates import SEQ_BLOCK, TurnUpdates
from app.sessions.views import SessionInfo, SessionPage, SessionSummary
from app.storage.errors import is_storage_unavailable

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.events import SessionEvent
    from app.sessions.store import SessionRecord, SessionStore
    from app.sessions.store_types import TranscriptRow, TurnEnd

__all__ = ["Opened", "SessionRegistry"]

log = logging.getLogger("zeroclaw.sessions")

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z")
DECISIONS = ("allow_once", "allow_always", "reject", "reject_with_edit")


@dataclass(frozen=True, slots=True)
class Opened:
    session: LiveSession
    resumed: bool
    message_count: int

    def describe(self) -> SessionInfo:
        s = self.session
        return SessionInfo(s.session_id, s.agent_alias, s.mode, self.message_count, str(s.workspace), self.resumed)


class SessionRegistry:
    def __init__(
        self,
        store: SessionStore,
        config: Callable[[], Config],
        data_dir: Path,
        encode: Callable[[Sequence[SessionEvent]], list[bytes]] | None = None,
    ) -> None:
        """`encode`: updates as standard-dialect frames, for several receivers to share (the protocol's, given by
        the composition root: the domain knows no wire)."""
        self.store = store
        self._encode = encode
        self._config = config
        self._data_dir = data_dir
        self.live: dict[str, LiveSession] = {}
        # One bring-up (create, attach, rehydrate) per session id at a time: two concurrent ones would both
        # recover it and make two live sessions, with a turn each.
        self._bringing_up = KeyedLock()
        self._letting_go: set[asyncio.Task[None]] = set()  # exact seqs of released sessions being stored

    # -- open / resume -----------------------------------------------------------------------------

    async def open(
        self,
        principal: Principal,
        *,
        agent_alias: str = "default",
        cwd: str | None = None,
        session_id: str | None = None,
        mode: Mode = "acp",
        surface: Surface = "rpc",
        tool_env: Mapping[str, str] | None = None,
    ) -> Opened:
        """Create, attach to, or rehydrate a session. The caller decides who watches it (`LiveSession.watch`).
        `tool_env`: variables for its commands from now on (R-ZC-6; kept in memory only, never stored)."""
        if session_id is None:
            opened = await self._open(principal, agent_alias, cwd, None, mode, surface)
        else:
            async with self._bringing_up.hold(session_id):
                opened = await self._open(principal, agent_alias, cwd, session_id, mode, surface)
        if tool_env is not None:
            opened.session.tool_env = tool_env
        return opened

    async def _open(
        self,
        principal: Principal,
        agent_alias: str,
        cwd: str | None,
        session_id: str | None,
        mode: Mode,
        surface: Surface,
    ) -> Opened:
        if session_id is not None and session_id in self.live:
            live = self.live[session_id]
            _check_owner(principal, live.owner)
            return Opened(live, True, await self._count(live))
        if session_id is not None:
            record = await self.store.get(session_id, mode)
            if record is not None:
                live = await self._rehydrate(principal, record)
                return Opened(live, True, await self._count(live))  # after recovery: its marker counts
        self._check_capacity()
        agent = self._agent(principal, agent_alias)
        workspace = self._workspace(principal, agent_alias, agent.workspace_dir, cwd)
        sid = session_id or f"s_{uuid.uuid4().hex}"
        record = await self.store.create(
            sid, owner=principal.id, agent_alias=agent_alias, workspace_dir=str(workspace), mode=mode, surface=surface,
            seq_reserved=SEQ_BLOCK,
        )  # fmt: skip
        if record.resumed:  # stored meanwhile by another caller: number on from what it stored
            seq = await self.store.seq(sid, mode=mode)
            live = self._bring_up(sid, principal.id, agent_alias, mode, workspace, surface, seq, seq)
        else:  # reserved with the row: its first turn stores nothing more for its numbers
            live = self._bring_up(sid, principal.id, agent_alias, mode, workspace, surface, 0, SEQ_BLOCK)
        return Opened(live, False, 0)

    async def _rehydrate(self, principal: Principal, record: SessionRecord) -> LiveSession:
        """Bring a stored session back to life as it was stored (owner, agent, workspace, surface): an ACP one
        with its interrupted turn recovered (R-ACP-5, R-ACP-8), a chat one that was only released (the gateway
        does so between calls). Never a killed one (R-ACP-9) nor a closed chat one (R-ACP-8)."""
        if record.killed:
            raise SessionKilled("The session was killed", session_id=record.session_id, mode=record.mode)
        if record.mode == "chat" and record.closed:
            raise SessionClosed("The chat session was closed", session_id=record.session_id)
        _check_owner(principal, record.owner)
        self._check_capacity()
        if record.mode == "acp":
            await self.store.recover_interrupted(record.session_id, surface="rpc")
        seq = await self.store.reopen_numbered(record.session_id, mode=record.mode, reserve=SEQ_BLOCK)
        return self._bring_up(
            record.session_id,
            record.owner,
            record.agent_alias,
            record.mode,
            Path(record.workspace_dir),
            record.surface,
            seq,
            seq + SEQ_BLOCK,
        )

    def _bring_up(
        self, sid: str, owner: str, agent: str, mode: Mode, workspace: Path, surface: Surface, seq: int, reserved: int
    ) -> LiveSession:
        """A live session whose updates number on from `seq`, stored as reserved up to `reserved` (R-MULTI-1),
        with its replay buffer (R-MULTI-2)."""
        keep = self._config().limits.replay_events
        live = LiveSession(
            sid, owner, agent, mode, workspace, surface, seq=seq, seq_reserved=reserved,
            retained=deque(maxlen=keep), frames=deque(maxlen=keep),
        )  # fmt: skip
        self.live[sid] = live
        return live

    async def _reserve_seq(self, live: LiveSession, up_to: int) -> None:
        """Store that seqs up to `up_to` may be used, before any of them is sent: a crash then skips the unsent
        ones and never numbers an update twice. On a storage fault the updates still go out (they matter more
        than their numbers' survival of a crash now); it is logged."""
        try:
            await self.store.store_seq(live.session_id, up_to, mode=live.mode)
        except Exception:
            log.warning("could not store a session's update numbers; a crash now may repeat some", exc_info=True)
        live.seq_reserved = up_to

    async def _store_exact_seq(self, live: LiveSession) -> None:
        """The last seq sent replaces the reservation, so the next bring-up numbers on without a jump."""
        if live.seq_reserved == live.seq:
            return
        try:
            await self.store.store_seq(live.session_id, live.seq, mode=live.mode, reserved=live.seq_reserved)
        except Exception:  # the reservation stays: numbering jumps ahead at the next bring-up, never repeats
            log.warning("could not store a session's last update number", exc_info=True)
            return
        live.seq_reserved = live.seq

    def _check_capacity(self) -> None:
        if len(self.live) >= self._config().limits.max_sessions:
            raise SessionLimit

    def _agent(self, principal: Principal, alias: str) -> Any:
        agent = self._config().agents.get(alias)
        if agent is None:
            raise UnknownAgent
        if not principal.may_use_agent(alias):
            raise AgentNotAllowed
        return agent

    def _workspace(self, principal: Principal, alias: str, configured: str | None, cwd: str | None) -> Path:
        default = Path(configured).expanduser() if configured else self._data_dir / "workspaces" / alias
        if cwd is None:
            default.mkdir(mode=0o700, parents=True, exist_ok=True)
            return default
        path = Path(cwd)
        if not path.is_absolute() or not path.is_dir():
            raise BadWorkspace
        # Only the owner/admin may point a session anywhere; others stay inside the agent's workspace.
        if not principal.admin and not path.resolve().is_relative_to(default.resolve()):
            raise BadWorkspace
        return path

    async def _count(self, live: LiveSession) -> int:
        _rows, total = await self.store.messages(live.session_id, mode=live.mode, limit=0)
        return total

    # -- lookups -----------------------------------------------------------------------------------

    def owned_live(self, principal: Principal, session_id: str) -> LiveSession:
        live = self.live.get(session_id)
        if live is None:
            raise SessionNotFound
        _check_owner(principal, live.owner)
        return live

    def release(self, session_id: str) -> bool:
        """Forget an idle live session nobody watches; its durable record stays open, so the next use opens it
        again (`open` with its id; `prompt` rehydrates an ACP one). The gateway's REST and webhook calls use it so
        a session they brought to life holds no live slot (`max_sessions`) between calls."""
        live = self.live.get(session_id)
        if live is None or live.busy or any(not w.closed for w in live.watchers):
            return False
        del self.live[session_id]
        if live.seq != live.seq_reserved:
            task = asyncio.get_running_loop().create_task(self._store_exact_seq(live))
            self._letting_go.add(task)
            task.add_done_callback(self._letting_go.discard)
        return True

    async def live_or_rehydrate(self, principal: Principal, session_id: str) -> LiveSession:
        live = self.live.get(session_id)
        if live is None:
            async with self._bringing_up.hold(session_id):
                live = self.live.get(session_id)  # brought up while this call waited?
                if live is None:
                    record = await self.store.get(session_id)
                    if record is None or record.mode != "acp":
                        raise SessionNotFound
                    return await self._rehydrate(principal, record)
        _check_owner(principal, live.owner)
        return live

    # -- turns -------------------------------------------------------------------------------------

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
        live = await self.live_or_rehydrate(principal, session_id)
        if live.busy:
            raise SessionBusy
        outcome = TurnOutcome(turn_id=f"t_{uuid.uuid4().hex[:16]}")
        live.turn_start_seq = live.seq  # R-MULTI-2: `session/attach` shows a running turn from here
        live.turn = asyncio.get_running_loop().create_task(self._turn(live, text, outcome, sink, client))
        return await asyncio.shield(live.turn)

    async def _turn(
        self, live: LiveSession, text: str, outcome: TurnOutcome, sink: UpdateSink | None, client: PromptingClient
    ) -> TurnOutcome:
        config = self._config()
        agent = config.agents[live.agent_alias]
        updates = TurnUpdates(live, sink, partial(self._reserve_seq, live), self._encode)
        tools = build_tools([t for t in agent.tools])
        settings = _turn_settings(config, agent, live, client)
        provider_config = config.providers.get(agent.provider)
        if live.mode == "chat":
            # R-MULTI-5: the provider is never sent more than the budget, also on the first turn of a chat
            # stored before migration 0006 (no snapshot yet); the context read is cached for the turn.
            await self._maybe_trim(live, updates, config, prompt=text)
        context = (await self.store.context(live.session_id, surface=live.surface, mode=live.mode)).messages
        body = asyncio.get_running_loop().create_task(
            run_turn(
                live,
                text,
                turn_id=outcome.turn_id,
                context=context,
                provider=build_provider(provider_config, model=agent.model) if provider_config else _missing(agent),
                tools=tools,
                store=self.store,
                updates=updates,
                settings=settings,
                outcome=outcome,
            )
        )
        live.body, live.cancel_cause = body, None
        await asyncio.wait({body})
        # Let go of the ended body: a cancelled one's exception holds `live` in a cycle (docs/limits.md).
        live.body = None
        storage_fault = _settle(body, outcome)
        await self._end_turn(live, outcome, updates, config, storage_fault)
        if storage_fault is not None:
            raise storage_fault
        return outcome

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
                await self.store.finish_turn(live.session_id, outcome.turn_id, outcome.stop_reason, mode=live.mode)
            except Exception as exc:
                if storage_fault is None or not is_storage_unavailable(exc):
                    raise
                # The same fault again: the turn stays open in storage, recovered like an interrupted one.
            else:
                await self._maybe_trim(live, updates, config)
        finally:
            await updates.emit(
                {
                    "session_id": live.session_id,
                    "type": "turn_complete",
                    "stop_reason": outcome.stop_reason,
                    "content": outcome.content,
                }
            )

    async def _maybe_trim(
        self, live: LiveSession, updates: TurnUpdates, config: Config, prompt: str | None = None
    ) -> None:
        """Trim the retained context when it is over `[context]`, in either mode (R-ACP-1, R-MULTI-5). Given the
        turn's `prompt` (before the turn): when the context plus that prompt would be; the prompt is not stored."""
        recovered = await self.store.context(live.session_id, surface=live.surface, mode=live.mode)
        pending = [] if prompt is None else [{"role": "user", "content": prompt}]
        limits = config.context
        trimmed = trim_context([*recovered.messages, *pending], limits.max_messages, limits.max_chars)
        if trimmed is None:
            return
        kept = trimmed.kept[: len(trimmed.kept) - len(pending)]
        try:
            await self.store.save_snapshot(
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

    async def needs_chat_open(self, principal: Principal, session_id: str, agent: str) -> bool:
        """Whether a turn of `agent` on chat session `session_id` must first open it (resume a stored one, or create
        it with that id); raises when it is not a chat session of `agent` the caller may use (the webhook's rule,
        R-GW-3). A closed or killed one is refused by `open`."""
        live = self.live.get(session_id)
        if live is not None:
            _check_chat(principal, live.owner, live.mode, live.agent_alias, agent)
            return False
        modes: tuple[Mode, ...] = ("acp", "chat")
        for mode in modes:
            record = await self.store.get(session_id, mode=mode)
            if record is not None:
                _check_chat(principal, record.owner, record.mode, record.agent_alias, agent)
        return True

    def cancel(self, principal: Principal, session_id: str) -> None:
        live = self.owned_live(principal, session_id)
        if live.busy and live.body is not None:
            live.cancel_cause = "client_rpc"
            live.body.cancel()

    def approve(
        self, principal: Principal, session_id: str, request_id: str, decision: str, replacement: str | None = None
    ) -> bool:
        """Answer an `approval_request`; `replacement` (with `reject_with_edit`) is what the user wants instead.
        The first answer wins (R-MULTI-3): False for one that comes after the request was settled (answered,
        timed out, or its turn ended); ApprovalNotFound for an id the session never gave."""
        live = self.owned_live(principal, session_id)
        pending = live.approvals.get(request_id)
        if pending is None or pending.done():
            if live.was_asked(request_id):
                return False
            raise ApprovalNotFound
        pending.set_result(Approval(decision, replacement if decision == "reject_with_edit" else None))
        return True

    def detach(self, principal: Principal, session_id: str, sink: UpdateSink) -> bool:
        """`sink` stops watching the session; False if it was not (or the session is not live: nobody watches)."""
        live = self.live.get(session_id)
        if live is None:
            return False
        _check_owner(principal, live.owner)
        watching = sink in live.watchers
        live.unwatch(sink)
        return watching

    async def attach(self, principal: Principal, session_id: str) -> LiveSession:
        """The live session to follow (R-MULTI-2), brought back to life if it is only stored: an ACP one with its
        interrupted turn recovered, a released chat one. Never a killed or a closed chat session."""
        live = self.live.get(session_id)
        if live is None:
            async with self._bringing_up.hold(session_id):
                live = self.live.get(session_id)
                if live is None:
                    record = await self.store.get(session_id) or await self.store.get(session_id, mode="chat")
                    if record is None:
                        raise SessionNotFound
                    return await self._rehydrate(principal, record)
        _check_owner(principal, live.owner)
        return live

    # -- reading -----------------------------------------------------------------------------------

    def list_query(
        self,
        principal: Principal,
        *,
        include_killed: bool = False,
        mode: Mode | None = None,
        query: str | None = None,
        cursor: str | None = None,
    ) -> tuple[ListQuery, Position | None]:
        """The principal's list (an admin's is everyone's) and where a page of it starts; BadCursor if `cursor`
        is malformed or was made for another list. An empty `query` matches every session."""
        listed = ListQuery(None if principal.admin else principal.id, include_killed, mode, query or None)
        return listed, None if cursor is None else decode_cursor(listed, cursor)

    async def list_page(self, query: ListQuery, after: Position | None, limit: int) -> SessionPage:
        """One `session/list` page (R-MULTI-4)."""
        return self._page(query, await self.store.page(query, after, limit))

    def page_now(self, query: ListQuery, after: Position | None, limit: int) -> SessionPage | None:
        """`list_page` without waiting, when the store keeps that list in memory (None: it has to be read)."""
        page = self.store.kept_page(query, after, limit)
        return None if page is None else self._page(query, page)

    def _page(self, query: ListQuery, page: Page) -> SessionPage:
        last = page.last
        return SessionPage(self._summaries(page.records), None if last is None else encode_cursor(query, last))

    def _summaries(self, records: list[SessionRecord]) -> list[SessionSummary]:
        return [
            SessionSummary(
                r.session_id,
                r.agent_alias,
                r.mode,
                (live := self.live.get(r.session_id)) is not None and live.mode == r.mode,
                r.killed,
                r.created_at,
                r.last_activity,
                r.message_count,
                r.title,
            )
            for r in records
        ]

    async def messages(
        self, principal: Principal, session_id: str, *, limit: int, before: int | None, turn_ends: bool = False
    ) -> tuple[list[TranscriptRow], int, list[TurnEnd] | None]:
        """A page of the transcript and the row total; with `turn_ends`, how each turn ending in the page ended
        (None without it: the store reads nothing more)."""
        live = self.live.get(session_id)
        if live is not None:
            _check_owner(principal, live.owner)
            mode: Mode = live.mode
        else:
            record = await self.store.get(session_id)
            if record is None:  # a chat session that is not live (released by the gateway, or after a restart)
                record = await self.store.get(session_id, mode="chat")
            if record is None:  # a closed chat session's history stays readable, as it is listed (R-MULTI-4)
                raise SessionNotFound
            _check_owner(principal, record.owner)
            mode = record.mode
        if turn_ends:
            return await self.store.messages_and_turn_ends(session_id, mode=mode, limit=limit, before=before)
        rows, total = await self.store.messages(session_id, mode=mode, limit=limit, before=before)
        return rows, total, None

    # -- lifecycle (R-ACP-8..11) -------------------------------------------------------------------

    async def close(self, principal: Principal, session_id: str) -> None:
        live = self.owned_live(principal, session_id)
        await _stop(live, "session_removed")
        self.live.pop(session_id, None)
        await self._store_exact_seq(live)
        await self.store.close(session_id, mode=live.mode)

    async def kill(self, principal: Principal, session_id: str) -> None:
        await self._destroy(principal, session_id, self.store.kill, "admin_kill")

    async def delete(self, principal: Principal, session_id: str) -> None:
        await self._destroy(principal, session_id, self.store.delete, "session_removed")

    async def _destroy(self, principal: Principal, session_id: str, operation: Any, cause: str) -> None:
        live = self.live.get(session_id)
        if live is not None and live.mode == "chat":
            live = None  # a live chat session with this id is a different thing: leave it alone (R-ACP-10)
        record = await self.store.get(session_id)
        if live is None and record is None:
            raise SessionNotFound
        _check_owner(principal, live.owner if live is not None else record.owner)  # type: ignore[union-attr]
        forced = False
        if live is not None and live.busy:
            # Signal cancellation before the fallible storage step (R-ACP-11); the owner is gone for good.
            await _stop(live, cause)
            self.live.pop(session_id, None)
            forced = True
        await operation(session_id)  # on failure: an inactive live owner stays registered
        if live is not None and not forced:
            self.live.pop(session_id, None)

    async def shutdown(self) -> None:
        for live in list(self.live.values()):
            await _stop(live)
            await self._store_exact_seq(live)
        if self._letting_go:
            await asyncio.wait(self._letting_go)


def _turn_settings(config: Config, agent: Agent, live: LiveSession, client: PromptingClient) -> TurnSettings:
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


def _check_chat(principal: Principal, owner: str, mode: str, agent_alias: str, agent: str) -> None:
    _check_owner(principal, owner)
    if mode != "chat":
        raise WrongSessionKind("not_chat_session", "The session is an ACP session; webhooks run chat sessions")
    if agent_alias != agent:
        raise WrongSessionKind("agent_mismatch", "The chat session belongs to another agent")


def _check_owner(principal: Principal, owner: str) -> None:
    if not principal.admin and principal.id != owner:
        raise SessionNotOwned


async def _stop(live: LiveSession, cause: str = "session_removed") -> None:
    """Cancel a running turn and wait (briefly) until it has written its terminal rows."""
    if live.body is not None and not live.body.done():
        live.cancel_cause = cause
        live.body.cancel()
    if live.turn is not None and not live.turn.done():
        await asyncio.wait({live.turn}, timeout=5)
