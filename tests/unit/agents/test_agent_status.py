"""`agents/status`'s counts (`app.agents.status`, R-ZC-4) over a real session store."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.status import AgentStatus, agent_statuses
from app.auth.policy import OWNER, Principal
from app.config import schema as config_schema
from app.config.schema import Config
from app.sessions.live.session import LiveSession
from app.sessions.store.session_store import SessionStore

pytestmark = pytest.mark.req("R-ZC-4")


def _live(sid: str, owner: str, alias: str) -> LiveSession:
    return LiveSession(sid, owner, alias, "acp", Path("/tmp"), "rpc")


async def test_counts_per_agent_for_the_caller_and_for_an_admin(store: SessionStore) -> None:
    config = config_schema.convert({"agents": {"coder": {}, "writer": {}}})
    for sid, owner, alias, mode in (
        ("a1", "alice", "coder", "acp"),
        ("a2", "alice", "coder", "chat"),
        ("a3", "alice", "default", "acp"),
        ("b1", "bob", "coder", "acp"),
        ("gone", "alice", "coder", "acp"),
        ("shut", "alice", "writer", "acp"),
    ):
        await store.create(sid, owner=owner, agent_alias=alias, workspace_dir="/tmp", mode=mode)  # type: ignore[arg-type]
    await store.kill("gone")
    await store.close("shut")
    live = {"a1": _live("a1", "alice", "coder"), "b1": _live("b1", "bob", "coder")}

    alice = Principal(id="alice", admin=False, agents=frozenset({"coder"}))
    mine = await agent_statuses(config, alice, live, store)
    assert mine == [
        AgentStatus("coder", True, 1, 2, []),
        AgentStatus("writer", False, 0, 0, []),  # closed: not counted; not an agent alice may use
        AgentStatus("default", False, 0, 1, []),
    ]
    everyone = {s.alias: s for s in await agent_statuses(config, OWNER, live, store)}
    assert everyone["coder"] == AgentStatus("coder", True, 2, 3, [])
    assert all(s.enabled for s in everyone.values())


async def test_the_implicit_default_agent_is_listed(store: SessionStore) -> None:
    assert await agent_statuses(Config(), OWNER, {}, store) == [AgentStatus("default", True, 0, 0, [])]
