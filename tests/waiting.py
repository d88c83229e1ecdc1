"""Waiting in tests: wait for the event that matters, not for a guessed number of seconds.

* `until(predicate)` (async) and `until_sync(predicate)` poll a predicate until it returns something truthy, and
  return that value; on timeout they raise `WaitTimeout` (an `AssertionError`) naming what was awaited and the
  last value seen. The predicate may be a coroutine function (`until` awaits it), e.g. a state read over RPC.
* The e2e harness (`e2e/e2e_harness.py`) builds on these: `Daemon.wait_stderr` (a log line),
  `Daemon.wait_audit` (an audit entry), `Client.wait_notification` (a notification).

A bare `sleep` in a test body belongs only where time is the behaviour (something must NOT happen within a
window, a stall or idle rule): keep it short and say why in a comment. `tests/sleep_count.py` counts them and
`tests/unit/test_test_waits.py` keeps the count under its ceiling.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["DEFAULT_TIMEOUT", "WaitTimeout", "until", "until_sync"]

T = TypeVar("T")
DEFAULT_TIMEOUT = 5.0


class WaitTimeout(AssertionError):
    """The awaited condition did not come true in time."""


def describe(predicate: Callable[..., Any], what: str | None) -> str:
    if what:
        return what
    with contextlib.suppress(OSError, TypeError):
        return inspect.getsource(predicate).strip()
    return getattr(predicate, "__qualname__", repr(predicate))


async def until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    interval: float = 0.01,
    what: str | None = None,
) -> T:
    """Poll `predicate` (sync or async) every `interval` s until it returns a truthy value; return that value.
    `interval=0` only yields to the event loop between polls (for conditions that other tasks make true)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() > deadline:
            raise WaitTimeout(f"not within {timeout} s: {describe(predicate, what)} (last: {value!r})")
        await asyncio.sleep(interval)


def until_sync(
    predicate: Callable[[], T],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    interval: float = 0.02,
    what: str | None = None,
) -> T:
    """`until` for a test without an event loop (a subprocess, a thread, a file)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"not within {timeout} s: {describe(predicate, what)} (last: {value!r})")
        time.sleep(interval)
