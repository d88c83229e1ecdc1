"""`agents/status` (R-ZC-4): each configured agent with the caller's live and stored session counts.

The field names are ZeroClaw 0.8.4's (`AgentStatusEntry`, crates/zeroclaw-runtime/src/rpc/types.rs), so the zerocode
dialect shows them as they are and the standard one in camelCase (`rpc.core.wire`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from app.config.schema import Config
    from app.sessions.live.session import LiveSession
    from app.sessions.store.session_store import SessionStore

__all__ = ["AgentStatus", "agent_statuses"]


@dataclass(frozen=True, slots=True)
class AgentStatus:
    alias: str
    enabled: bool  # the caller may open sessions with it (`allowed_agents`); every agent is, for an admin
    live_sessions: int  # live in this daemon now
    persisted_sessions: int  # stored and resumable: neither killed nor closed
    channels: list[str]  # ZeroClaw's channel bindings; this daemon has none


async def agent_statuses(
    config: Config, principal: Principal, live: Mapping[str, LiveSession], store: SessionStore
) -> list[AgentStatus]:
    """One entry per `[agents.<alias>]`, the implicit `agents.default` included, in config order. The counts are the
    caller's own sessions; an admin's are everyone's (as `session/list` shows them)."""
    owner = None if principal.admin else principal.id
    live_counts = Counter(s.agent_alias for s in live.values() if owner is None or s.owner == owner)
    stored = await store.lists.list(owner)  # killed ones are left out
    stored_counts = Counter(r.agent_alias for r in stored if not r.closed)
    return [
        AgentStatus(alias, principal.may_use_agent(alias), live_counts[alias], stored_counts[alias], [])
        for alias in config.agents
    ]
