"""The daemon's signal handling (app/signals.py): the loop's handlers on Unix, the `signal.signal` fallback that
Windows' event loops need (they raise NotImplementedError from `add_signal_handler`), exercised here on Linux."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Iterator

import pytest

from app.signals import install_signal_handlers

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="sends POSIX signals to itself")

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def restore_handlers() -> Iterator[None]:
    """Whatever a test does, the process's own handlers are as they were afterwards."""
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def without_loop_handlers(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make `loop` behave like a Windows event loop: no `add_signal_handler`."""
    tried: list[int] = []

    def refuse(sig: int, callback: Callable[..., object], *args: object) -> None:
        tried.append(sig)
        raise NotImplementedError

    monkeypatch.setattr(loop, "add_signal_handler", refuse)
    return tried


async def wait_set(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), 2.0)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_the_loop_handlers_stop_the_daemon(sig: signal.Signals) -> None:
    loop = asyncio.get_running_loop()
    stop, reload = asyncio.Event(), asyncio.Event()
    undo = install_signal_handlers(loop, stop.set, reload=reload.set)
    try:
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler  # the loop's wakeup handler
        os.kill(os.getpid(), sig)
        await wait_set(stop)
        assert not reload.is_set()
        undo()  # nothing to undo: asyncio removes the loop's handlers when the loop closes
        assert loop.remove_signal_handler(sig)
    finally:
        for other in SIGNALS:
            loop.remove_signal_handler(other)


async def test_the_loop_handlers_reload_on_sighup() -> None:
    loop = asyncio.get_running_loop()
    stop, reload = asyncio.Event(), asyncio.Event()
    install_signal_handlers(loop, stop.set, reload=reload.set)
    try:
        os.kill(os.getpid(), signal.SIGHUP)
        await wait_set(reload)
        assert not stop.is_set()
    finally:
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_without_add_signal_handler_a_plain_handler_stops_the_daemon(
    sig: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    tried = without_loop_handlers(loop, monkeypatch)
    stop = asyncio.Event()
    before = {other: signal.getsignal(other) for other in SIGNALS}  # SIGINT: asyncio.Runner's own handler
    undo = install_signal_handlers(loop, stop.set)
    assert tried == [signal.SIGINT]  # the first refusal chooses the fallback
    assert callable(signal.getsignal(sig)) and signal.getsignal(sig) not in (signal.default_int_handler, None)
    signal.raise_signal(sig)  # the handler runs now, in this (the main) thread, and hands `stop` to the loop
    assert not stop.is_set()  # only scheduled: call_soon_threadsafe, never called from the handler
    await wait_set(stop)
    undo()
    assert {other: signal.getsignal(other) for other in SIGNALS} == before


async def test_the_fallback_reloads_on_sighup_where_it_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    without_loop_handlers(loop, monkeypatch)
    before = signal.getsignal(signal.SIGHUP)  # SIG_IGN under nohup (regression: the test assumed SIG_DFL)
    stop, reload = asyncio.Event(), asyncio.Event()
    undo = install_signal_handlers(loop, stop.set, reload=reload.set)
    os.kill(os.getpid(), signal.SIGHUP)
    await wait_set(reload)
    assert not stop.is_set()
    undo()
    assert signal.getsignal(signal.SIGHUP) == before


async def test_the_fallback_handler_from_another_thread_wakes_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop blocked in its selector still wakes up: the handler goes through call_soon_threadsafe."""
    loop = asyncio.get_running_loop()
    without_loop_handlers(loop, monkeypatch)
    stop = asyncio.Event()
    undo = install_signal_handlers(loop, stop.set)
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler)
    await asyncio.to_thread(handler, signal.SIGTERM, None)
    await wait_set(stop)
    undo()


def test_the_fallback_handler_after_the_loop_closed_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.new_event_loop()
    without_loop_handlers(loop, monkeypatch)
    called: list[str] = []
    undo = install_signal_handlers(loop, lambda: called.append("stop"))
    try:
        loop.close()
        signal.raise_signal(signal.SIGTERM)  # a signal racing the end: no RuntimeError from a closed loop
        assert called == []
    finally:
        undo()


def test_a_partial_install_is_taken_back_before_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.new_event_loop()
    try:
        real_add = loop.add_signal_handler
        added: list[int] = []

        def second_refuses(sig: int, callback: Callable[..., object], *args: object) -> None:
            if added:
                raise NotImplementedError
            added.append(sig)
            real_add(sig, callback, *args)

        monkeypatch.setattr(loop, "add_signal_handler", second_refuses)
        undo = install_signal_handlers(loop, lambda: None)
        assert added == [signal.SIGINT]
        assert not loop.remove_signal_handler(signal.SIGINT)  # already taken back
        undo()
    finally:
        loop.close()
