"""At `max_sessions` an idle live session is unloaded instead of refusing a new one (SPEC §5, issue 38 §5.2).

Idle: no running turn and no attached connection. The least recently used idle session goes; it stays stored and
comes back on use (open, attach, a prompt; a chat session too). `-32001` (`SessionLimit`) only when every live
session is busy, attached or held by a one-shot call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from session_doubles import ALICE, NoClient

from app.config import schema as config_schema
from app.sessions.errors import SessionLimit
from app.sessions.mode import SessionMode
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore

pytestmark = [pytest.mark.req("R-LIM"), pytest.mark.req("R-SES-4")]


@dataclass(eq=False)
class Sink:
    """An attached connection (`closed` False) or one that went away (`closed` True)."""

    closed: bool = False
    principal_id: str | None = "alice"
    updates: list[dict[str, Any]] = field(default_factory=list)

    async def send_updates(self, updates: Sequence[dict[str, Any]], frames: Sequence[bytes] | None = None) -> None:
        self.updates += updates

    def drop(self) -> None:
        self.closed = True


def registry(store: SessionStore, tmp_path: Path, max_sessions: int) -> SessionRegistry:
    config = config_schema.convert({"limits": {"max_sessions": max_sessions}})
    return SessionRegistry(store, lambda: config, tmp_path)


async def new(reg: SessionRegistry, mode: SessionMode = SessionMode.CHAT) -> str:
    return (await reg.open(ALICE, mode=mode)).session.session_id


async def say(reg: SessionRegistry, sid: str, text: str) -> None:
    outcome = await reg.turns.prompt(ALICE, sid, text, sink=None, client=NoClient())
    assert outcome.stop_reason == "end_turn", outcome


async def transcript(reg: SessionRegistry, sid: str) -> list[str]:
    rows, _total, _ends = await reg.reading.messages(ALICE, sid, limit=100, before=None)
    return [row.content for row in rows if row.role == "user"]


async def test_the_least_recently_used_idle_session_is_unloaded_and_comes_back_with_its_transcript(
    store: SessionStore, tmp_path: Path
) -> None:
    reg = registry(store, tmp_path, 3)
    a, b, c = await new(reg), await new(reg, SessionMode.DURABLE), await new(reg)
    await say(reg, a, "remember a")  # a prompt is a use: `a` is now the most recent
    await say(reg, b, "remember b")
    d = await new(reg)
    assert list(reg.live) == [a, b, d]  # `c`, used least recently, made room
    page = await reg.reading.list_page(*reg.reading.list_query(ALICE), 10)
    assert {s.session_id: s.live for s in page.sessions} == {a: True, b: True, c: False, d: True}
    # it comes back on use, as it was stored, making room in turn (now `a` is the least recent)
    opened = await reg.open(ALICE, session_id=c)  # the mode it was unloaded in, whatever is asked
    assert opened.resumed and opened.session.mode is SessionMode.CHAT
    assert list(reg.live) == [b, d, c]
    # an unloaded chat session comes back on a prompt too (a released one would not: R-ACP-8)
    await say(reg, a, "again a")
    assert await transcript(reg, a) == ["remember a", "again a"]
    assert list(reg.live) == [d, c, a]
    # a durable one on attach, with its transcript
    assert (await reg.attach(ALICE, b)).session_id == b
    assert await transcript(reg, b) == ["remember b"]
    assert list(reg.live) == [c, a, b]


async def test_busy_attached_and_held_sessions_are_never_unloaded(store: SessionStore, tmp_path: Path) -> None:
    reg = registry(store, tmp_path, 3)
    attached, busy, held = await new(reg), await new(reg, SessionMode.DURABLE), await new(reg)
    reg.live[attached].watch(Sink())
    gone = Sink(closed=True)  # a connection that went away does not keep its session
    reg.live[held].watch(gone)
    reg.pinned.add(held)  # a REST or webhook call holds it (`HttpTurns`)
    turn = asyncio.get_running_loop().create_task(
        reg.turns.prompt(ALICE, busy, "/sleep 0.3", sink=None, client=NoClient())
    )
    await asyncio.sleep(0)  # the prompt runs up to its turn's start
    assert reg.live[busy].busy
    with pytest.raises(SessionLimit):
        await new(reg)
    assert set(reg.live) == {attached, busy, held}
    await turn  # the turn ended: its session is idle now, and goes first
    newest = await new(reg)
    assert set(reg.live) == {attached, held, newest}
    reg.pinned.discard(held)  # the call is over: its session is idle (its only watcher went away)
    last = await new(reg)
    assert set(reg.live) == {attached, newest, last}


async def test_an_unloaded_session_can_be_closed(store: SessionStore, tmp_path: Path) -> None:
    reg = registry(store, tmp_path, 1)
    first = await new(reg, SessionMode.DURABLE)
    second = await new(reg)
    assert list(reg.live) == [second]
    await reg.close(ALICE, first)  # as if it had stayed live
    assert first not in reg.live and (await store.get(first)).closed  # type: ignore[union-attr]
