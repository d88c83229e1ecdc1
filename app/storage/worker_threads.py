"""Threads that run blocking calls for the event loop, in submission order: the SQLite runner's writer and readers.

`loop.run_in_executor` on a `ThreadPoolExecutor` does the same with a `concurrent.futures.Future` per call,
chained to an asyncio future by callbacks, and a semaphore and thread-count check per submit; that was ~6 % of the
event loop's time during sequential turns, which make four storage calls each. Here a call is one tuple on a
`SimpleQueue` and its asyncio future is settled straight from the thread with `call_soon_threadsafe`.

As with an executor, a call whose caller was cancelled before the call started is not run; one that started
always runs to its end (its caller is just no longer told).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["WorkerThreads"]

T = TypeVar("T")

_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class WorkerThreads:
    """`count` threads taking calls from one queue; with one thread, calls run one at a time in submission order."""

    def __init__(self, count: int, name: str) -> None:
        self._queue: SimpleQueue[_Call | None] = SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, name=f"{name}_{i}", daemon=True) for i in range(count)]
        for thread in self._threads:
            thread.start()

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue `fn(*args)`; the returned future (of the running loop) gets its result or exception."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, fn, args))
        return future

    def stop(self) -> None:
        """Run every call already queued, then end the threads (blocking: call it from a thread)."""
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        while (call := self._queue.get()) is not None:
            loop, future, fn, args = call
            if future.cancelled():  # read across threads: at worst a cancelled caller's call still runs
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # as an executor does: the caller gets it, the thread lives on
                _settle(loop, future, None, exc)
            else:
                _settle(loop, future, result, None)


def _settle(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, exc: BaseException | None
) -> None:
    def settle() -> None:
        if future.done():  # the caller was cancelled meanwhile
            return
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(settle)
