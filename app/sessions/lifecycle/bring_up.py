"""Bringing sessions to life (SPEC §7): create one, or find it live, else rehydrate it from storage, on ONE path.

Every caller that names a session (open, attach, prompt, close of an unloaded one) goes through `BringUp.resume` or
`BringUp.open`, which differ only in which stored modes they accept and in what they do when nothing is stored. The
live cap (`max_sessions`, SPEC §5) is kept here: a bring-up at the cap first unloads the least recently used idle
session (`LettingGo`), and is refused (`SessionLimit`) only when every live session is busy or attached.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.auth.policy import Principal
from app.config.schema import Config
from app.sessions.access import check_owner
from app.sessions.errors import (
    AgentNotAllowed,
    BadWorkspace,
    SessionClosed,
    SessionKilled,
    SessionLimit,
    SessionNotFound,
    UnknownAgent,
)
from app.sessions.lifecycle.keyed_lock import KeyedLock
from app.sessions.lifecycle.letting_go import LettingGo
from app.sessions.live.session import LiveSession
from app.sessions.live.updates import SEQ_BLOCK
from app.sessions.mode import SessionMode, on_wire
from app.sessions.settings import effective
from app.sessions.store.types import Surface
from app.sessions.views import SessionInfo

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.session_store import SessionStore
    from app.sessions.store.types import SessionRecord

__all__ = ["DURABLE_ONLY", "BringUp", "Opened", "check_configurable", "stored"]

# What a prompt rehydrates: a durable session (a chat one comes back when opened or attached, R-ACP-8).
DURABLE_ONLY = (SessionMode.DURABLE,)


@dataclass(frozen=True, slots=True)
class Opened:
    """A session just opened, attached to or rehydrated, with its transcript's length (`session/new`)."""

    session: LiveSession
    resumed: bool
    message_count: int
    model: str | None = None  # the effective settings (R-MODEL-4, `app.sessions.settings`)
    temperature: float | None = None

    def describe(self) -> SessionInfo:
        s = self.session
        workspace = str(s.workspace)
        return SessionInfo(
            s.session_id, s.agent_alias, on_wire(s.mode), self.message_count, workspace, self.resumed, self.model,
            self.temperature,
        )  # fmt: skip


async def stored(store: SessionStore, session_id: str, modes: Collection[SessionMode]) -> SessionRecord | None:
    """The stored session with this id in the first of `modes` that has one (ids are per mode)."""
    for mode in modes:
        record = await store.get(session_id, mode)
        if record is not None:
            return record
    return None


def check_configurable(record: SessionRecord) -> None:
    """A stored session whose settings may change (R-MODEL-4): one that could be brought back (not killed, not a
    closed chat session)."""
    if record.killed:
        raise SessionKilled("The session was killed", session_id=record.session_id, mode=record.mode)
    if record.mode == SessionMode.CHAT and record.closed:
        raise SessionClosed("The chat session was closed", session_id=record.session_id)


class BringUp:
    """Puts sessions in the live table: new ones, and stored ones as they were stored (owner, agent, workspace,
    surface, update numbering). One bring-up per session id at a time (`KeyedLock`): two concurrent ones would both
    recover it and make two live sessions, with a turn each. The table is kept in order of use, oldest first."""

    def __init__(
        self,
        store: SessionStore,
        config: Callable[[], Config],
        data_dir: Path,
        live: dict[str, LiveSession],
        letting_go: LettingGo,
        pinned: Collection[str],
    ) -> None:
        self._store = store
        self._config = config
        self._data_dir = data_dir
        self._live = live
        self._letting_go = letting_go
        self._pinned = pinned  # held by one-shot calls (`HttpTurns`): never unloaded
        self._bringing_up = KeyedLock()

    async def open(
        self,
        principal: Principal,
        *,
        agent_alias: str = "default",
        cwd: str | None = None,
        session_id: str | None = None,
        mode: SessionMode = SessionMode.DURABLE,
        surface: Surface = "rpc",
        tool_env: Mapping[str, str] | None = None,
    ) -> Opened:
        """Create, attach to, or rehydrate a session. The caller decides who watches it (`LiveSession.watch`).
        `tool_env`: variables for its commands from now on (R-ZC-6; kept in memory only, never stored)."""
        if session_id is None:
            opened = await self._create(principal, agent_alias, cwd, None, mode, surface)
        else:
            async with self._bringing_up.hold(session_id):
                live = await self._live_or_stored(principal, session_id, (mode,))
                if live is not None:  # after recovery: its marker counts
                    opened = Opened(live, True, await self._count(live))
                else:
                    opened = await self._create(principal, agent_alias, cwd, session_id, mode, surface)
        if tool_env is not None:
            opened.session.tool_env = tool_env
        live = opened.session
        model, temperature = effective(self._config(), live.agent_alias, live.model, live.temperature)
        return replace(opened, model=model, temperature=temperature)

    async def resume(self, principal: Principal, session_id: str, modes: Collection[SessionMode]) -> LiveSession:
        """The caller's live session, else the stored one of the first of `modes` brought back to life; else
        SessionNotFound. Never a killed session (R-ACP-9) nor a closed chat one (R-ACP-8)."""
        live = self._live.get(session_id)
        if live is None:
            async with self._bringing_up.hold(session_id):
                live = await self._live_or_stored(principal, session_id, modes)
            if live is None:
                raise SessionNotFound
            return live
        check_owner(principal, live.owner)
        self._used(live)
        return live

    def holding(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """The session's bring-up lock: nothing brings it to life (from what is stored) while it is held."""
        return self._bringing_up.hold(session_id)

    def owned(self, principal: Principal, session_id: str) -> LiveSession:
        """The caller's live session, as it is (nothing is brought back): SessionNotFound if it is not live."""
        live = self._live.get(session_id)
        if live is None:
            raise SessionNotFound
        check_owner(principal, live.owner)
        return live

    async def _live_or_stored(
        self, principal: Principal, session_id: str, modes: Collection[SessionMode]
    ) -> LiveSession | None:
        """THE "live, else rehydrate" step, under the session's bring-up lock; None when nothing is stored."""
        live = self._live.get(session_id)  # brought up while this call waited?
        if live is not None:
            check_owner(principal, live.owner)
            self._used(live)
            return live
        unloaded = self._letting_go.unloaded.get(session_id)
        if unloaded is not None:
            modes = (unloaded,)  # unloaded to make room: it comes back on any use, as if it had stayed live
        record = await stored(self._store, session_id, modes)
        return None if record is None else await self._rehydrate(principal, record)

    async def _rehydrate(self, principal: Principal, record: SessionRecord) -> LiveSession:
        """A stored session back to life as it was stored: a durable one with its interrupted turn recovered
        (R-ACP-5, R-ACP-8), a chat one that was only released (the gateway does so between calls)."""
        check_configurable(record)
        check_owner(principal, record.owner)
        self._make_room()
        if record.mode == SessionMode.DURABLE:
            await self._store.transcript.recover_interrupted(record.session_id, surface="rpc")
        seq = await self._store.reopen_numbered(record.session_id, mode=record.mode, reserve=SEQ_BLOCK)
        self._letting_go.unloaded.pop(record.session_id, None)
        r = record
        live = self._bring_up(
            r.session_id, r.owner, r.agent_alias, r.mode, Path(r.workspace_dir), r.surface, seq, seq + SEQ_BLOCK
        )
        live.model, live.temperature = r.model, r.temperature  # R-MODEL-4: as `session/configure` stored them
        return live

    async def _create(
        self,
        principal: Principal,
        agent_alias: str,
        cwd: str | None,
        session_id: str | None,
        mode: SessionMode,
        surface: Surface,
    ) -> Opened:
        self._make_room()
        agent = self._agent(principal, agent_alias)
        workspace = self._workspace(principal, agent_alias, agent.workspace_dir, cwd)
        sid = session_id or f"s_{uuid.uuid4().hex}"
        record = await self._store.create(
            sid, owner=principal.id, agent_alias=agent_alias, workspace_dir=str(workspace), mode=mode, surface=surface,
            seq_reserved=SEQ_BLOCK,
        )  # fmt: skip
        if record.resumed:  # stored meanwhile by another caller: number on from what it stored
            seq = await self._store.seq(sid, mode=mode)
            live = self._bring_up(sid, principal.id, record.agent_alias, mode, workspace, surface, seq, seq)
            live.model, live.temperature = record.model, record.temperature
        else:  # reserved with the row: its first turn stores nothing more for its numbers
            live = self._bring_up(sid, principal.id, agent_alias, mode, workspace, surface, 0, SEQ_BLOCK)
        return Opened(live, False, 0)

    def _bring_up(
        self,
        sid: str,
        owner: str,
        agent: str,
        mode: SessionMode,
        workspace: Path,
        surface: Surface,
        seq: int,
        reserved: int,
    ) -> LiveSession:
        """A live session whose updates number on from `seq`, stored as reserved up to `reserved` (R-MULTI-1),
        with its replay buffer (R-MULTI-2)."""
        keep = self._config().limits.replay_events
        live = LiveSession(
            sid, owner, agent, SessionMode(mode), workspace, surface, seq=seq, seq_reserved=reserved,
            retained=deque(maxlen=keep), frames=deque(maxlen=keep),
        )  # fmt: skip
        self._live[sid] = live
        return live

    def _used(self, live: LiveSession) -> None:
        """Move a session to the recent end of the live table (the order `LettingGo` unloads in)."""
        table = self._live
        table[live.session_id] = table.pop(live.session_id)

    def _make_room(self) -> None:
        """Room for one more live session (SPEC §5 `max_sessions`): at the cap, unload the least recently used
        idle one; `SessionLimit` when every live session is busy or attached."""
        if len(self._live) >= self._config().limits.max_sessions and not self._letting_go.unload_least_recent(
            self._pinned
        ):
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
        _rows, total = await self._store.transcript.messages(live.session_id, mode=live.mode, limit=0)
        return total
