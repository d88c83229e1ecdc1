"""The session service: live sessions by id, their durable records, and the turn lifecycle (SPEC §7).

Ownership (R-SES-1), the live cap (`max_sessions`), busy turns (R-SES-2), resume/rehydrate (R-ACP-5, 8) and
close/kill/delete ordering (R-ACP-8..11) live behind it, so every surface (RPC, REST, webhooks) shares them. The
work is done in `app.sessions.lifecycle` (bring-up, letting go, ending), `app.sessions.live` (turns) and
`app.sessions.reading` (lists and transcripts); this is where they are put together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.agents.mcp import McpHub
from app.auth.policy import Principal
from app.config.schema import Config
from app.sessions.access import check_chat, check_owner
from app.sessions.branching import SessionBranching
from app.sessions.errors import AgentNotAllowed, SessionNotFound, UnknownAgent
from app.sessions.lifecycle.bring_up import DURABLE_ONLY, BringUp, Opened, check_configurable, stored
from app.sessions.lifecycle.ending import Ending
from app.sessions.lifecycle.letting_go import LettingGo
from app.sessions.live.session import LiveSession
from app.sessions.live.sink import UpdateSink
from app.sessions.live.turns import Turns
from app.sessions.mode import EITHER, SessionMode
from app.sessions.reading import SessionReader
from app.sessions.settings import KEEP, Keep, SessionSettings, effective
from app.sessions.store.types import Surface

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.agents.permissions import RuleBook
    from app.agents.sandbox import SandboxHost
    from app.sessions.events import SessionEvent
    from app.sessions.store.session_store import SessionStore

__all__ = ["SessionRegistry"]

Settings = tuple[str, str | None, float | None]  # agent alias, model and temperature chosen (None: the agent's)


def _chosen(
    current: Settings, agent_alias: str | None, model: str | Keep | None, temperature: float | Keep | None
) -> Settings:
    """The stored settings after a `configure` of those given (`KEEP`: unchanged)."""
    alias, was_model, was_temperature = current
    if isinstance(model, Keep):
        model = was_model if agent_alias is None or agent_alias == alias else None
    return agent_alias or alias, model, was_temperature if isinstance(temperature, Keep) else temperature


class SessionRegistry:
    """The sessions of one daemon. `live` is the live table (id → `LiveSession`, in order of use, oldest first);
    `turns` runs prompts, approvals and cancels on them; `reading` answers lists and transcripts; `store` is the
    durable store. Its own methods are the lifecycle: open, find or bring back, let go, end."""

    def __init__(
        self,
        store: SessionStore,
        config: Callable[[], Config],
        data_dir: Path,
        encode: Callable[[Sequence[SessionEvent]], list[bytes]] | None = None,
        rule_book: RuleBook | None = None,
        sandbox: SandboxHost | None = None,
    ) -> None:
        """`encode`: updates as standard-dialect frames, for several receivers to share (the protocol's, given by
        the composition root: the domain knows no wire)."""
        self.store = store
        self._config = config
        self.live: dict[str, LiveSession] = {}
        # Sessions a one-shot call holds (`HttpTurns`): one call at a time each, and never unloaded meanwhile.
        self.pinned: set[str] = set()
        self._letting_go = LettingGo(store, self.live)
        self._bring_up = BringUp(store, config, data_dir, self.live, self._letting_go, self.pinned)
        self._ending = Ending(store, self.live, self._bring_up, self._letting_go)
        self.turns = Turns(store, config, self.live_or_rehydrate, self.owned_live, encode, rule_book, sandbox)
        self.turns.mcp = McpHub(config, self.live.__contains__)  # R-MCP-4: a server stops with its last session
        self.reading = SessionReader(store, self.live, config)
        self.branching = SessionBranching(store, self.live, self.turns.announce)  # session/fork (R-BRANCH-1)

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
        return await self._bring_up.open(
            principal, agent_alias=agent_alias, cwd=cwd, session_id=session_id, mode=mode, surface=surface,
            tool_env=tool_env,
        )  # fmt: skip

    async def live_or_rehydrate(self, principal: Principal, session_id: str) -> LiveSession:
        """The caller's session to run a turn on: live, else a stored durable one rehydrated (a chat session only
        when it was unloaded to make room)."""
        return await self._bring_up.resume(principal, session_id, DURABLE_ONLY)

    async def attach(self, principal: Principal, session_id: str) -> LiveSession:
        """The live session to follow (R-MULTI-2), brought back to life if it is only stored: a durable one with
        its interrupted turn recovered, a released chat one. Never a killed or a closed chat session."""
        return await self._bring_up.resume(principal, session_id, EITHER)

    def owned_live(self, principal: Principal, session_id: str) -> LiveSession:
        return self._bring_up.owned(principal, session_id)

    def release(self, session_id: str) -> bool:
        """Forget an idle live session nobody watches; its durable record stays open, so the next use opens it
        again (`open` with its id; `prompt` rehydrates a durable one). The gateway's REST and webhook calls use it
        so a session they brought to life holds no live slot (`max_sessions`) between calls."""
        return self._letting_go.release(session_id)

    async def needs_chat_open(self, principal: Principal, session_id: str, agent: str) -> bool:
        """Whether a turn of `agent` on chat session `session_id` must first open it (resume a stored one, or create
        it with that id); raises when it is not a chat session of `agent` the caller may use (the webhook's rule,
        R-GW-3). A closed or killed one is refused by `open`."""
        live = self.live.get(session_id)
        if live is not None:
            check_chat(principal, live.owner, live.mode, live.agent_alias, agent)
            return False
        for mode in EITHER:
            record = await self.store.get(session_id, mode)
            if record is not None:
                check_chat(principal, record.owner, record.mode, record.agent_alias, agent)
        return True

    def detach(self, principal: Principal, session_id: str, sink: UpdateSink) -> bool:
        """`sink` stops watching the session; False if it was not (or the session is not live: nobody watches)."""
        live = self.live.get(session_id)
        if live is None:
            return False
        check_owner(principal, live.owner)
        watching = sink in live.watchers
        live.unwatch(sink)
        return watching

    async def configure(
        self,
        principal: Principal,
        session_id: str,
        *,
        agent_alias: str | None = None,
        model: str | Keep | None = KEEP,
        temperature: float | Keep | None = KEEP,
    ) -> SessionSettings:
        """Set a session's agent, model and temperature (R-MODEL-4): stored with it, used from its next provider
        step, announced to its followers as `config_changed`; answers the effective settings. A setting left out
        (`KEEP`) stays; None resets it to the agent's own. Switching to another agent without naming a model resets
        the model too (a model belongs to a provider). A session that is only stored is configured in storage."""
        config = self._config()
        if agent_alias is not None:
            if agent_alias not in config.agents:
                raise UnknownAgent
            if not principal.may_use_agent(agent_alias):
                raise AgentNotAllowed
        live = self.live.get(session_id)
        if live is None:
            async with self._bring_up.holding(session_id):
                live = self.live.get(session_id)
                if live is None:
                    record = await stored(self.store, session_id, EITHER)
                    if record is None:
                        raise SessionNotFound
                    check_owner(principal, record.owner)
                    check_configurable(record)
                    was = (record.agent_alias, record.model, record.temperature)
                    now = _chosen(was, agent_alias, model, temperature)
                    await self.store.configure(
                        session_id, mode=record.mode, agent_alias=now[0], model=now[1], temperature=now[2]
                    )
                    return SessionSettings(session_id, now[0], *effective(config, *now))
        check_owner(principal, live.owner)
        now = _chosen((live.agent_alias, live.model, live.temperature), agent_alias, model, temperature)
        await self.store.configure(session_id, mode=live.mode, agent_alias=now[0], model=now[1], temperature=now[2])
        live.agent_alias, live.model, live.temperature = now
        settings = SessionSettings(session_id, now[0], *effective(config, *now))
        await self.turns.announce(
            live,
            {
                "session_id": session_id,
                "type": "config_changed",
                "agent_alias": settings.agent_alias,
                "model": settings.model,
                "temperature": settings.temperature,
            },
        )
        return settings

    async def close(self, principal: Principal, session_id: str) -> None:
        await self._ending.close(principal, session_id)

    async def kill(self, principal: Principal, session_id: str) -> None:
        await self._ending.kill(principal, session_id)

    async def delete(self, principal: Principal, session_id: str) -> None:
        await self._ending.delete(principal, session_id)

    async def shutdown(self) -> None:
        await self._ending.shutdown()
        await self.turns.mcp.shutdown()  # R-MCP-4: no server outlives the daemon
