"""`KeyedLock`: one holder per key at a time, and no entry left behind (the session bring-up lock)."""

from __future__ import annotations

import asyncio

import pytest

from app.sessions.lifecycle.keyed_lock import KeyedLock


@pytest.mark.req("R-SES-2")
async def test_one_holder_per_key_and_other_keys_are_free() -> None:
    locks = KeyedLock()
    inside: list[str] = []
    log: list[tuple[str, str]] = []

    async def hold(key: str, name: str) -> None:
        async with locks.hold(key):
            inside.append(key)
            assert inside.count(key) == 1, inside
            log.append((name, "in"))
            await asyncio.sleep(0.01)
            log.append((name, "out"))
            inside.remove(key)

    await asyncio.gather(hold("a", "a1"), hold("a", "a2"), hold("b", "b1"), hold("a", "a3"))
    a_events = [event for event in log if event[0].startswith("a")]
    assert a_events == [("a1", "in"), ("a1", "out"), ("a2", "in"), ("a2", "out"), ("a3", "in"), ("a3", "out")]
    assert log.index(("b1", "in")) < log.index(("a1", "out"))  # "b" never waited for "a"
    assert len(locks) == 0


@pytest.mark.req("R-SES-2")
async def test_the_entry_outlives_its_holder_while_someone_waits() -> None:
    locks = KeyedLock()
    first_in, release = asyncio.Event(), asyncio.Event()
    holders = 0

    async def first() -> None:
        async with locks.hold("k"):
            first_in.set()
            await release.wait()

    async def later() -> None:
        nonlocal holders
        async with locks.hold("k"):
            holders += 1
            assert holders == 1  # a fresh entry made after the first left would let two in at once
            await asyncio.sleep(0.01)
            holders -= 1

    task = asyncio.create_task(first())
    await first_in.wait()
    waiters = [asyncio.create_task(later()) for _ in range(2)]
    await asyncio.sleep(0)  # one loop turn: both start and queue on the lock
    release.set()
    await task
    await asyncio.gather(later(), *waiters)  # one more arrives just as the first holder leaves
    assert len(locks) == 0


@pytest.mark.req("R-SES-2")
async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    locks = KeyedLock()
    entered = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            entered.set()
            await asyncio.sleep(0.05)

    task = asyncio.create_task(holder())
    await entered.wait()
    waiter = asyncio.create_task(locks.hold("k").__aenter__())
    await asyncio.sleep(0)  # one loop turn: it queues on the lock
    waiter.cancel()
    await asyncio.gather(task, waiter, return_exceptions=True)
    assert len(locks) == 0
