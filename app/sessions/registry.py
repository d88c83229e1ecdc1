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

from app.auth.policy import Principal
from app.config.schema import Config
from app.sessions.access import check_chat, check_owner
from app.sessions.lifecycle.bring_up import DURABLE_ONLY, BringUp, Opened
from app.sessions.lifecycle.ending import Ending
from app.sessions.lifecycle.letting_go import LettingGo
from app.sessions.live.session import LiveSession
from app.sessions.live.sink import UpdateSink
from app.sessions.live.turns import Turns
from app.sessions.mode import EITHER, SessionMode
from app.sessions.reading import SessionReader
from app.sessions.store.types import Surface

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.agents.permissions import RuleBook
    from app.agents.sandbox import SandboxHost
    from app.sessions.events import SessionEvent
    from app.sessions.store.session_store import SessionStore

__all__ = ["SessionRegistry"]


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
        self.live: dict[str, LiveSession] = {}
        # Sessions a one-shot call holds (`HttpTurns`): one call at a time each, and never unloaded meanwhile.
        self.pinned: set[str] = set()
        self._letting_go = LettingGo(store, self.live)
        self._bring_up = BringUp(store, config, data_dir, self.live, self._letting_go, self.pinned)
        self._ending = Ending(store, self.live, self._bring_up, self._letting_go)
        self.turns = Turns(store, config, self.live_or_rehydrate, self.owned_live, encode, rule_book, sandbox)
        self.reading = SessionReader(store, self.live)

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

    async def close(self, principal: Principal, session_id: str) -> None:
        await self._ending.close(principal, session_id)

    async def kill(self, principal: Principal, session_id: str) -> None:
        await self._ending.kill(principal, session_id)

    async def delete(self, principal: Principal, session_id: str) -> None:
        await self._ending.delete(principal, session_id)

    async def shutdown(self) -> None:
        await self._ending.shutdown()
