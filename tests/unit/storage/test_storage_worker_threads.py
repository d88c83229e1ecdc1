"""The threads behind the SQLite runner (`app.storage.worker_threads`): order, errors, cancellation and shutdown as an
executor gives them, which `Database`'s write and read contracts rely on (R-ACP-4)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.storage.worker_threads import WorkerThreads


@pytest.mark.req("R-ACP-4")
async def test_one_thread_runs_calls_one_at_a_time_in_submission_order() -> None:
    workers = WorkerThreads(1, "t-worker")
    try:
        seen: list[int] = []
        futures = [workers.run(seen.append, n) for n in range(200)]
        await asyncio.gather(*futures)
        assert seen == list(range(200))
        assert await workers.run(lambda: threading.current_thread().name) == "t-worker_0"
    finally:
        await asyncio.to_thread(workers.stop)


async def test_a_calls_exception_reaches_its_caller_and_the_thread_goes_on() -> None:
    workers = WorkerThreads(1, "t-worker")
    try:
        with pytest.raises(ZeroDivisionError):
            await workers.run(lambda: 1 // 0)
        assert await workers.run(lambda: 42) == 42
    finally:
        await asyncio.to_thread(workers.stop)


async def test_a_call_cancelled_before_it_started_never_runs_and_a_started_one_finishes() -> None:
    workers = WorkerThreads(1, "t-worker")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocking() -> None:
        started.set()
        assert release.wait(10)
        ran.append("started")

    try:
        first = workers.run(blocking)
        queued = workers.run(ran.append, "queued")
        assert await asyncio.to_thread(started.wait, 10)
        first.cancel()
        queued.cancel()
        release.set()
        assert await workers.run(lambda: "after") == "after"
        assert ran == ["started"]  # the started call ran to its end; the queued one was skipped
        assert first.cancelled() and queued.cancelled()
    finally:
        await asyncio.to_thread(workers.stop)


async def test_stop_runs_what_was_queued_then_ends_every_thread() -> None:
    workers = WorkerThreads(3, "t-workers")
    done: list[int] = []
    lock = threading.Lock()

    def record(n: int) -> None:
        with lock:
            done.append(n)

    for n in range(50):
        workers.run(record, n)
    await asyncio.to_thread(workers.stop)
    assert sorted(done) == list(range(50))
    assert not [t for t in threading.enumerate() if t.name.startswith("t-workers")]
