"""The threads behind the SQLite runner (`app.storage.lanes`): order, errors, cancellation and shutdown as an
executor gives them, which `Database`'s write and read contracts rely on (R-ACP-4)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.storage.lanes import Lanes


@pytest.mark.req("R-ACP-4")
async def test_one_lane_runs_calls_one_at_a_time_in_submission_order() -> None:
    lanes = Lanes(1, "t-lane")
    try:
        seen: list[int] = []
        futures = [lanes.run(seen.append, n) for n in range(200)]
        await asyncio.gather(*futures)
        assert seen == list(range(200))
        assert await lanes.run(lambda: threading.current_thread().name) == "t-lane_0"
    finally:
        await asyncio.to_thread(lanes.stop)


async def test_a_calls_exception_reaches_its_caller_and_the_thread_goes_on() -> None:
    lanes = Lanes(1, "t-lane")
    try:
        with pytest.raises(ZeroDivisionError):
            await lanes.run(lambda: 1 // 0)
        assert await lanes.run(lambda: 42) == 42
    finally:
        await asyncio.to_thread(lanes.stop)


async def test_a_call_cancelled_before_it_started_never_runs_and_a_started_one_finishes() -> None:
    lanes = Lanes(1, "t-lane")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocking() -> None:
        started.set()
        assert release.wait(10)
        ran.append("started")

    try:
        first = lanes.run(blocking)
        queued = lanes.run(ran.append, "queued")
        assert await asyncio.to_thread(started.wait, 10)
        first.cancel()
        queued.cancel()
        release.set()
        assert await lanes.run(lambda: "after") == "after"
        assert ran == ["started"]  # the started call ran to its end; the queued one was skipped
        assert first.cancelled() and queued.cancelled()
    finally:
        await asyncio.to_thread(lanes.stop)


async def test_stop_runs_what_was_queued_then_ends_every_thread() -> None:
    lanes = Lanes(3, "t-lanes")
    done: list[int] = []
    lock = threading.Lock()

    def record(n: int) -> None:
        with lock:
            done.append(n)

    for n in range(50):
        lanes.run(record, n)
    await asyncio.to_thread(lanes.stop)
    assert sorted(done) == list(range(50))
    assert not [t for t in threading.enumerate() if t.name.startswith("t-lanes")]
