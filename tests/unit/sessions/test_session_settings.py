"""Per-session settings (R-MODEL-4) through `SessionRegistry.configure` over a real store: stored (a restart is a
new registry on the same database), shown by `session/new` and `session/list`, announced as `config_changed`,
and in force from the next provider step (the scripted provider's `/model` says what it was built with)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from session_doubles import ALICE, NoClient, Sink
from waiting import until

from app.auth.policy import Principal
from app.config import schema as config_schema
from app.config.schema import Config
from app.sessions.errors import AgentNotAllowed, SessionKilled, SessionNotOwned, UnknownAgent
from app.sessions.mode import SessionMode
from app.sessions.registry import SessionRegistry
from app.sessions.settings import KEEP, effective
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import upgrade

pytestmark = [pytest.mark.req("R-MODEL-4"), pytest.mark.req("R-STORE-2")]

BOB = Principal(id="bob", admin=False, agents=frozenset({"default"}))


@dataclass
class Env:
    store: SessionStore
    config: Config
    data_dir: Path

    def registry(self) -> SessionRegistry:
        return SessionRegistry(self.store, lambda: self.config, self.data_dir)


@pytest.fixture
async def env(tmp_path: Path, database_url: str) -> AsyncIterator[Env]:
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    config = config_schema.convert(
        {
            "providers": {"warm": {"kind": "scripted", "model": "warm-1", "temperature": 0.7}},
            "agents": {"other": {"provider": "warm"}, "tuned": {"model": "tuned-9"}},
        }
    )
    try:
        yield Env(SessionStore(db), config, tmp_path)
    finally:
        await db.close()


async def model_line(registry: SessionRegistry, sid: str) -> str:
    outcome = await registry.turns.prompt(ALICE, sid, "/model", sink=None, client=NoClient())
    return outcome.content


async def test_configure_is_stored_shown_announced_and_used_by_the_next_turn(env: Env) -> None:
    registry = env.registry()
    opened = await registry.open(ALICE)
    sid = opened.session.session_id
    assert (opened.describe().model, opened.describe().temperature) == ("scripted", None)
    assert await model_line(registry, sid) == "model: scripted, temperature: default"

    follower = Sink()
    opened.session.watch(follower)
    settings = await registry.configure(ALICE, sid, model="big-model", temperature=0.25)
    assert (settings.agent_alias, settings.model, settings.temperature) == ("default", "big-model", 0.25)
    await asyncio.sleep(0.05)  # the follower's task sends it
    changed = [u for u in follower.updates if u["type"] == "config_changed"]
    assert changed == [
        {"session_id": sid, "type": "config_changed", "agent_alias": "default", "model": "big-model",
         "temperature": 0.25, "seq": changed[0]["seq"]}
    ]  # fmt: skip
    assert await model_line(registry, sid) == "model: big-model, temperature: 0.25"
    listed = (await registry.reading.list_page(*registry.reading.list_query(ALICE), 10)).sessions
    assert [(s.model, s.temperature) for s in listed] == [("big-model", 0.25)]

    # A restart: a new registry on the same database brings the session back with its settings.
    again = env.registry()
    assert await model_line(again, sid) == "model: big-model, temperature: 0.25"
    reopened = await again.open(ALICE, session_id=sid)
    assert (reopened.describe().model, reopened.describe().temperature) == ("big-model", 0.25)

    # Left out: kept; null: the agent's own again.
    settings = await again.configure(ALICE, sid, model=None)
    assert (settings.model, settings.temperature) == ("scripted", 0.25)


async def test_switching_agent_resets_the_model_and_persists(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, agent_alias="tuned")).session.session_id
    await registry.configure(ALICE, sid, model="mine")
    settings = await registry.configure(ALICE, sid, agent_alias="other")
    assert (settings.agent_alias, settings.model, settings.temperature) == ("other", "warm-1", 0.7)
    assert await model_line(registry, sid) == "model: warm-1, temperature: 0.7"
    record = await env.store.get(sid)
    assert record is not None and (record.agent_alias, record.model) == ("other", None)
    assert (await env.registry().open(ALICE, session_id=sid)).session.agent_alias == "other"


async def test_a_stored_session_is_configured_without_being_brought_to_life(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE, mode=SessionMode.CHAT)).session.session_id
    later = env.registry()  # nothing live
    settings = await later.configure(ALICE, sid, temperature=1.5)
    assert settings.temperature == 1.5 and sid not in later.live
    record = await env.store.get(sid, SessionMode.CHAT)
    assert record is not None and record.temperature == 1.5


async def test_refusals(env: Env) -> None:
    registry = env.registry()
    sid = (await registry.open(ALICE)).session.session_id
    with pytest.raises(UnknownAgent):
        await registry.configure(ALICE, sid, agent_alias="nobody")
    with pytest.raises(SessionNotOwned):
        await registry.configure(BOB, sid, model="x")
    bobs = (await registry.open(BOB)).session.session_id
    with pytest.raises(AgentNotAllowed):
        await registry.configure(BOB, bobs, agent_alias="other")
    await registry.kill(ALICE, sid)
    with pytest.raises(SessionKilled):
        await env.registry().configure(ALICE, sid, model="x")


def test_effective_settings() -> None:
    config = config_schema.convert(
        {"providers": {"remote": {"kind": "openai", "model": "gpt-x"}}, "agents": {"r": {"provider": "remote"}}}
    )
    assert effective(config, "r", None, None) == ("gpt-x", None)
    assert effective(config, "r", "gpt-y", 0.1) == ("gpt-y", 0.1)
    assert effective(config, "default", None, None) == ("scripted", None)
    assert effective(config, "gone", None, None) == (None, None)
    assert repr(KEEP) == "KEEP"


def test_the_turns_provider_is_built_again_at_a_step_only_when_the_settings_changed() -> None:
    """From the next provider step (R-MODEL-4): `SessionProvider` follows the live session's settings."""
    from app.config.schema import Agent
    from app.config.schema import Provider as ProviderConfig
    from app.sessions.live.provider import SessionProvider
    from app.sessions.live.session import LiveSession

    live = LiveSession("s1", "alice", "default", SessionMode.DURABLE, Path("/tmp"), "rpc")
    turn = SessionProvider(live, Agent(provider="warm", model="agent-m"), ProviderConfig(temperature=0.7))
    first = turn.current()
    assert (turn.model, turn.temperature) == ("agent-m", 0.7)  # asked of the provider in force
    assert turn.current() is first
    live.model, live.temperature = "chosen", 0.1
    assert turn.current() is not first and (turn.model, turn.temperature) == ("chosen", 0.1)
    with pytest.raises(AttributeError):
        turn._missing  # noqa: B018 - private names are not the provider's


async def test_a_switch_during_a_turn_applies_from_its_next_step(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn waits on an approval; the model switched meanwhile is the one its next provider step is built with."""
    import app.sessions.live.provider as session_provider

    built: list[str | None] = []
    real = session_provider.build_provider

    def spy(config: Any, *, model: str | None = None, alias: str | None = None) -> Any:
        built.append(model)
        return real(config, model=model, alias=alias)

    monkeypatch.setattr(session_provider, "build_provider", spy)
    registry = env.registry()
    opened = await registry.open(ALICE, agent_alias="tuned")
    sid, follower = opened.session.session_id, Sink()
    opened.session.watch(follower)
    turn = asyncio.ensure_future(registry.turns.prompt(ALICE, sid, "/bash echo hi", sink=None, client=NoClient()))
    asked = await until(
        lambda: [u for u in follower.updates if u["type"] == "approval_request"], what="the approval request"
    )
    await registry.configure(ALICE, sid, model="mid-turn")
    registry.turns.approve(ALICE, sid, asked[0]["request_id"], "reject")
    outcome = await turn
    assert outcome.stop_reason == "end_turn" and built == ["tuned-9", "mid-turn"]
