"""What each turn cost, stored (R-MODEL-5): `SessionStore.usage` on both session modes and both backends."""

from __future__ import annotations

import pytest

from app.sessions.errors import SessionNotFound
from app.sessions.mode import SessionMode
from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import UsageRecord

pytestmark = pytest.mark.req("R-MODEL-5")


async def _record(store: SessionStore, sid: str, turn: str, *, mode: SessionMode, cost: float | None) -> int:
    return await store.usage.record(sid, UsageRecord(turn, "openai", "gpt-x", 2, 10, 4, 3, 1, cost), mode=mode)


@pytest.mark.parametrize("mode", [SessionMode.DURABLE, SessionMode.CHAT])
async def test_turns_are_numbered_in_order_per_session_and_mode(store: SessionStore, mode: SessionMode) -> None:
    await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w", mode=mode)
    assert await store.usage.turns("s1", mode=mode) == []
    assert await _record(store, "s1", "t1", mode=mode, cost=0.25) == 0
    assert await _record(store, "s1", "t2", mode=mode, cost=None) == 1
    first, second = await store.usage.turns("s1", mode=mode)
    assert (first.index, first.turn_id, first.cost_usd, second.index, second.cost_usd) == (0, "t1", 0.25, 1, None)
    assert (first.provider, first.model, first.steps) == ("openai", "gpt-x", 2)
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.cache_write_tokens) == (10, 4, 3, 1)
    assert first.at.tzinfo is not None
    other = SessionMode.CHAT if mode == SessionMode.DURABLE else SessionMode.DURABLE
    assert await store.usage.turns("s1", mode=other) == []  # the other mode's session of that id is another one


async def test_delete_takes_the_usage_with_it_and_an_unknown_session_is_refused(store: SessionStore) -> None:
    await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
    await _record(store, "s1", "t1", mode=SessionMode.DURABLE, cost=1.0)
    assert await store.delete("s1")
    assert await store.usage.turns("s1") == []
    with pytest.raises(SessionNotFound):
        await _record(store, "s1", "t2", mode=SessionMode.DURABLE, cost=1.0)


SPENT = UsageRecord("t1", "p", None, 1, 1, 1, 0, 0, None)


async def test_a_turns_end_stores_its_usage_in_the_same_transaction(store: SessionStore) -> None:
    await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
    await store.transcript.append("s1", role="user", content="hi", turn_id="t1", surface="rpc")
    store.faults.arm("finish_turn", 1)
    with pytest.raises(Exception, match="injected"):
        await store.transcript.finish_turn("s1", "t1", "end_turn", usage=SPENT)
    assert await store.usage.turns("s1") == []  # rolled back with the turn's end
    await store.transcript.finish_turn("s1", "t1", "end_turn", usage=SPENT)
    [turn] = await store.usage.turns("s1")
    assert (turn.index, turn.turn_id, turn.model, turn.cost_usd) == (0, "t1", None, None)
