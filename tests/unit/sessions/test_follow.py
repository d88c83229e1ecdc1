"""Numbered updates, the replay buffer and the followers of one live session (R-MULTI-1, R-MULTI-2), in memory.

`app.sessions.live.updates.TurnUpdates` numbers and keeps each update and wakes every follower; a follower sends from
the buffer at its own pace (`app.sessions.live.follow`), so a watcher that does not read holds up neither the turn
nor the others, and one that falls behind what is kept is cut off rather than sent a hole.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from gc_probe import cyclic_garbage
from waiting import until

from app.sessions.live.session import LiveSession
from app.sessions.live.updates import SEQ_BLOCK, TurnUpdates

pytestmark = pytest.mark.req("R-MULTI-2")


class Sink:
    """A receiver; `gate` (when set) makes every send wait until it is opened."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.got: list[dict[str, Any]] = []
        self.frames: list[bytes] = []
        self.principal_id = "alice"
        self.closed = False
        self.dropped = False
        self.sends = 0  # sends begun

    async def send_updates(self, updates: Sequence[Any], frames: Sequence[bytes] | None = None) -> None:
        self.sends += 1
        if self.gate is not None:
            await self.gate.wait()
        self.got += updates
        self.frames += frames or []

    def drop(self) -> None:
        self.dropped = True


def live_session(keep: int = 100) -> LiveSession:
    return LiveSession(
        "s1", "alice", "default", "acp", Path("/tmp"), "rpc", retained=deque(maxlen=keep), frames=deque(maxlen=keep)
    )


def updates_for(live: LiveSession, prompter: Any, reserved: list[int], encode: Any = None) -> TurnUpdates:
    async def reserve(up_to: int) -> None:
        reserved.append(up_to)
        live.seq_reserved = up_to

    return TurnUpdates(live, prompter, reserve, encode)


def seqs(updates: Sequence[dict[str, Any]]) -> list[int]:
    return [u["seq"] for u in updates]


@pytest.mark.req("R-MULTI-1")
async def test_updates_are_numbered_kept_and_reserved_before_they_are_sent() -> None:
    live, prompter, reserved = live_session(keep=5), Sink(), []
    updates = updates_for(live, prompter, reserved)
    await updates.text(["a", "b", "c"])
    await updates.emit({"session_id": "s1", "type": "turn_complete", "stop_reason": "end_turn", "content": "abc"})
    assert seqs(prompter.got) == [1, 2, 3, 4] and live.seq == 4
    assert reserved == [3 + SEQ_BLOCK]  # one write for the whole block
    await updates.text(["d", "e"])
    assert seqs(live.retained) == [2, 3, 4, 5, 6]  # the newest `replay_events`
    assert seqs(live.events_after(3) or []) == [4, 5, 6]
    assert live.events_after(6) == [] and live.events_after(0) is None  # seq 1 is no longer kept
    assert live.frames_after(3) is None  # nobody shared an encoding: each receiver encodes its own


async def test_a_watcher_that_does_not_read_holds_up_neither_the_turn_nor_the_others() -> None:
    live, prompter, reserved = live_session(), Sink(), []
    stuck, reader = Sink(gate=asyncio.Event()), Sink()
    live.watch(stuck)
    live.watch(reader)
    updates = updates_for(live, prompter, reserved)
    for n in range(10):
        await asyncio.wait_for(updates.text([f"t{n}"]), 1)  # never waits for `stuck`
    await until(lambda: len(reader.got) == 10, interval=0)
    assert seqs(prompter.got) == seqs(reader.got) == list(range(1, 11))
    assert stuck.got == []
    assert stuck.gate is not None
    stuck.gate.set()  # it reads again: it gets all of it, in order, from the buffer
    await until(lambda: len(stuck.got) == 10, interval=0)
    assert seqs(stuck.got) == list(range(1, 11))


async def test_a_watcher_that_falls_behind_what_is_kept_is_cut_off_not_sent_a_hole() -> None:
    live, prompter, reserved = live_session(keep=4), Sink(), []
    stuck = Sink(gate=asyncio.Event())
    live.watch(stuck)
    updates = updates_for(live, prompter, reserved)
    await updates.text(["a"])
    await until(lambda: stuck.sends == 1, interval=0)  # its first send is under way (waiting)
    await updates.text(["b", "c", "d", "e", "f"])
    assert stuck.gate is not None
    stuck.gate.set()
    await until(lambda: stuck.dropped and stuck not in live.watchers, interval=0)
    assert seqs(stuck.got) == [1]


async def test_several_receivers_share_one_encoding() -> None:
    calls: list[int] = []

    def encode(events: Sequence[Any]) -> list[bytes]:
        calls.append(len(events))
        return [b"frame-%d" % e["seq"] for e in events]

    live, prompter, reserved = live_session(), Sink(), []
    live.watch(prompter)  # the prompter follows too (it called session/new)
    alone = updates_for(live, prompter, reserved, encode)
    await alone.text(["a", "b"])
    assert calls == [] and prompter.frames == []  # one receiver: it encodes its own, as before
    other = Sink()
    live.watch(other)
    await alone.text(["c", "d"])
    await until(lambda: len(other.frames) == 2, interval=0)
    assert calls == [2]  # once for both
    assert prompter.frames == other.frames == [b"frame-3", b"frame-4"]
    assert seqs(prompter.got) == [1, 2, 3, 4] and seqs(other.got) == [3, 4]


@pytest.mark.req("R-LIM")
async def test_a_session_dropped_with_followers_is_freed_by_reference_counting() -> None:
    """docs/limits.md "Garbage": a follower holds no reference to its session."""
    live, reserved = live_session(), []
    gone = weakref.ref(live)
    with cyclic_garbage() as garbage:
        live.watch(Sink())
        await updates_for(live, None, reserved).text(["a"])
        for _ in range(3):
            await asyncio.sleep(0)  # the follower's send ended
        del live
        assert gone() is None, "not freed by reference counting alone"
    assert not {"LiveSession", "Follower"} & set(garbage), garbage


@pytest.mark.req("R-MULTI-3")
def test_an_approval_id_is_known_once_given_and_ids_count_on_from_the_stored_seq() -> None:
    live = LiveSession("s1", "alice", "default", "acp", Path("/tmp"), "rpc", seq=41, seq_reserved=41)
    assert live.next_request_id() == "ap_42"
    assert live.was_asked("ap_42") and live.was_asked("ap_7")  # given before a restart: late, not unknown
    assert not live.was_asked("ap_43") and not live.was_asked("r1") and not live.was_asked("ap_")
