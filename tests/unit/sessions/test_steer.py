"""Steering a running turn (R-BRANCH-3) through `SessionRegistry` over a real store: the text joins at the turn's
next provider step (the scripted provider answers the last user message, so `/context` as a steer shows what the
model was given), is stored there as a user row of the turn, is announced as `user_message`, and answers None
(`accepted:false`) when the turn ended before taking it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from session_doubles import ALICE, NoClient, Sink
from waiting import until

from app.auth.policy import Principal
from app.config import schema as config_schema
from app.sessions.errors import BadForkPoint, NoRunningTurn, SessionNotFound, SessionNotOwned
from app.sessions.live.steer import SteerInbox, join_steers
from app.sessions.mode import SessionMode
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.migrate import upgrade

pytestmark = pytest.mark.req("R-BRANCH-3")

BOB = Principal(id="bob", admin=False, agents=frozenset({"*"}))


@pytest.fixture
async def registry(tmp_path: Path, database_url: str) -> AsyncIterator[SessionRegistry]:
    await asyncio.to_thread(upgrade, database_url)
    db = await Database.open(database_url)
    config = config_schema.convert({})
    try:
        yield SessionRegistry(SessionStore(db), lambda: config, tmp_path)
    finally:
        await db.close()


async def waiting_for_approval(registry: SessionRegistry, sid: str) -> tuple[asyncio.Task[Any], str]:
    """A turn whose first step called bash, now waiting for its approval; (the prompt's task, the request id)."""
    turn = asyncio.create_task(registry.turns.prompt(ALICE, sid, "/bash echo first", sink=None, client=NoClient()))
    live = registry.live[sid]
    request_id: str = await until(lambda: next(iter(live.approvals), None), 10)
    return turn, request_id


@pytest.mark.parametrize("mode", [SessionMode.DURABLE, SessionMode.CHAT])
async def test_a_steer_joins_at_the_next_step_is_stored_there_and_announced(
    registry: SessionRegistry, mode: SessionMode
) -> None:
    opened = await registry.open(ALICE, mode=mode)
    sid = opened.session.session_id
    follower = Sink()
    opened.session.watch(follower)
    turn, request_id = await waiting_for_approval(registry, sid)
    steer = asyncio.create_task(registry.branching.steer(ALICE, sid, "/context"))
    await until(lambda: registry.live[sid].steers.pending, 10)  # offered while the tool call waits
    assert not steer.done()
    registry.turns.approve(ALICE, sid, request_id, "allow_once")
    index = await steer
    assert index == 3  # the prompt 0, the tool call 1 (no text before it), its result 2, then the steer
    outcome = await turn
    # The step after the tool call was given the steer: the scripted provider answered it with its context.
    lines = outcome.content.splitlines()
    assert lines[-2].startswith("tool: first") and lines[-1] == "user: /context", lines
    rows, _total = await registry.store.transcript.messages(sid, mode=mode)
    assert (rows[index].role, rows[index].content) == ("user", "/context")
    announced = await until(lambda: [u for u in follower.updates if u["type"] == "user_message"], 10)
    assert announced == [
        {"session_id": sid, "type": "user_message", "text": "/context", "index": index, "seq": announced[0]["seq"]}
    ]
    # The next turn's context (and a rehydrated one's) has it where it was taken.
    later = await registry.turns.prompt(ALICE, sid, "/context", sink=None, client=NoClient())
    seen = later.content.splitlines()
    assert seen[3] == "user: /context" and seen[4].startswith("assistant: user: /bash echo first"), seen
    with pytest.raises(NoRunningTurn):
        await registry.branching.steer(ALICE, sid, "too late")
    # A fork is at a turn's prompt, never at a steer inside a turn (R-BRANCH-1).
    with pytest.raises(BadForkPoint, match="steered"):
        await registry.branching.fork(ALICE, sid, index)
    forked = await registry.branching.fork(ALICE, sid, 0)
    assert forked.forked_at == 0


async def test_a_steer_the_turn_never_took_answers_none(registry: SessionRegistry) -> None:
    sid = (await registry.open(ALICE)).session.session_id
    turn, _request_id = await waiting_for_approval(registry, sid)
    steer = asyncio.create_task(registry.branching.steer(ALICE, sid, "never taken"))
    await until(lambda: registry.live[sid].steers.pending, 10)
    registry.turns.cancel(ALICE, sid)  # the turn ends while the steer waits for its next step
    assert await steer is None
    assert (await turn).stop_reason == "cancelled"
    rows, _total = await registry.store.transcript.messages(sid)
    assert "never taken" not in [row.content for row in rows]


async def test_a_steer_is_refused_without_a_running_turn_or_on_another_principals_session(
    registry: SessionRegistry,
) -> None:
    sid = (await registry.open(ALICE)).session.session_id
    with pytest.raises(NoRunningTurn):
        await registry.branching.steer(ALICE, sid, "idle")
    turn, request_id = await waiting_for_approval(registry, sid)
    with pytest.raises(SessionNotOwned):
        await registry.branching.steer(BOB, sid, "not mine")
    with pytest.raises(SessionNotFound):
        await registry.branching.steer(ALICE, "s_never_was", "nowhere")
    registry.turns.approve(ALICE, sid, request_id, "reject")
    await turn


async def test_the_inbox_answers_none_once_closed() -> None:
    inbox = SteerInbox()
    waiting = inbox.offer("a")
    assert inbox.pending
    inbox.close()
    assert waiting.result() is None and not inbox.pending
    assert inbox.offer("b").result() is None and not inbox.pending


class SlowTranscript:
    """A transcript whose write of the steer row finishes only when told (`release`), as a commit may."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.rows: list[dict[str, Any]] = []

    async def append(self, session_id: str, **row: Any) -> int:
        await self.release.wait()
        self.rows.append(row)
        return 7


async def test_a_turn_cancelled_while_the_steer_row_is_written_answers_with_the_stored_index() -> None:
    """Regression: the row was committed but the offer answered None (accepted:false), and the client prompted the
    same text again."""
    inbox = SteerInbox()
    answer = inbox.offer("steer me")
    store = SlowTranscript()
    emitted: list[dict[str, Any]] = []

    class Updates:
        async def emit(self, update: dict[str, Any]) -> None:
            emitted.append(update)

    joining = asyncio.create_task(
        join_steers(inbox, "s_1", [], store, Updates(), lambda **fields: fields)  # type: ignore[arg-type]
    )
    await until(lambda: not inbox.pending, 5)  # taken, its row being written
    joining.cancel()
    await asyncio.sleep(0)  # the cancellation reaches the task while the write still waits: that is the race
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await joining
    assert store.rows == [{"role": "user", "content": "steer me"}]
    assert answer.result() == 7
