"""Tests wait for events, not for guessed times (issue 38 §4): the sleeps written in test bodies stay few, and
each says why it is there. Counted by `tests/sleep_count.py`; waits go through `tests/waiting.py` or the e2e
harness (`Daemon.wait_stderr`, `Daemon.wait_audit`, `Client.wait_notification`)."""

from __future__ import annotations

import ast
import time

import pytest
from sleep_count import TESTS, direct_sleeps, files_of_tests, is_test_body, sleeps_in_test_bodies
from waiting import WaitTimeout, until, until_sync

CEILING = 45  # issue 38: at most 45 (100 before); lower it as sleeps go, never raise it


def test_few_sleeps_are_written_in_test_bodies() -> None:
    found = sleeps_in_test_bodies()
    listing = "\n".join(f"{path.relative_to(TESTS.parent)}:{line} {name}" for path, line, name in found)
    assert len(found) <= CEILING, (
        f"{len(found)} sleeps in test bodies (ceiling {CEILING}): wait for the event instead (tests/waiting.py)\n"
        + listing
    )


def test_every_sleep_left_in_a_test_body_says_why() -> None:
    """Where time is the behaviour (nothing may happen within a window, a stall or idle rule, a clock), the sleep
    stays, with a comment on its line or just above it."""
    silent: list[str] = []
    for path, line, name in sleeps_in_test_bodies():
        lines = path.read_text().splitlines()
        near = lines[max(0, line - 3) : line]
        if not any("#" in text for text in near):
            silent.append(f"{path.relative_to(TESTS.parent)}:{line} {name}")
    assert not silent, "sleeps without a comment saying why:\n" + "\n".join(silent)


def test_the_counter_sees_every_kind_of_sleep() -> None:
    tree = ast.parse(
        "async def test_x():\n"
        "    await asyncio.sleep(0)\n"
        "    time.sleep(1)\n"
        "    await anyio.sleep(1)\n"
        "    async def helper():\n"
        "        await asyncio.sleep(1)\n"  # in a nested helper: not written in the test body itself
        "    await until(lambda: True)\n"
    )
    (fn,) = [node for node in ast.walk(tree) if isinstance(node, ast.AsyncFunctionDef) and is_test_body(node)]
    assert [ast.unparse(call.func) for call in direct_sleeps(fn)] == ["asyncio.sleep", "time.sleep", "anyio.sleep"]
    assert any(path.name == "test_e2e_lifecycle.py" for path in files_of_tests())


async def test_until_returns_the_value_awaits_a_coroutine_and_names_what_it_waited_for() -> None:
    ticks = iter(range(100))
    assert await until(lambda: next(ticks) >= 3, interval=0) is True

    async def read() -> list[int]:
        return [1]

    assert await until(read) == [1]
    with pytest.raises(WaitTimeout, match=r"not within 0.05 s: the door to open \(last: False\)"):
        await until(lambda: False, 0.05, what="the door to open")


def test_until_sync_gives_up_after_its_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match="never"):
        until_sync(lambda: None, 0.1, interval=0.01, what="never")
    assert 0.1 <= time.monotonic() - started < 1.0
    assert until_sync(lambda: "now") == "now"
