"""What the loop thread prints while the main thread waits at `zeroclaw rpc`'s prompt (docs/cli.md).

Regression (CI of stop 45, `test_rpc_interactive_asks_the_person_when_the_daemon_asks`): the loop thread read
readline's line buffer, to draw the prompt again with what was typed, while the main thread's readline was
resetting it for the next line; glibc aborted the process (`mbsrtowcs_l.c:93: __mbsrtowcs_l: Assertion`). readline
may be touched by the main thread only: a block that arrives at the prompt is printed by a signal handler on the
main thread, or by readline's pre-input hook when readline has not drawn the prompt yet.

A first fix wrote the block with `sys.stdout.write` in that handler; the pty test of `rpc.discover` showed half of
its 200 kB answer: the next signal cut the write short and the rest was lost.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import signal
import sys
import threading
import time
import tty
import types
from collections.abc import Callable, Iterator

import pytest
from waiting import until_sync

from app.cli import terminal

pytestmark = [
    pytest.mark.req("R-CLI"),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals; Windows has no readline to race"),
]

PROMPT = "rpc> "


class Readline(types.ModuleType):
    """A stand-in for the `readline` module: notes which thread reads its buffer, and keeps the pre-input hook."""

    def __init__(self) -> None:
        super().__init__("readline")
        self.readers: list[threading.Thread] = []
        self.pre_input_hook: Callable[[], None] | None = None

    def get_line_buffer(self) -> str:
        self.readers.append(threading.current_thread())
        return "sess"

    def set_pre_input_hook(self, hook: Callable[[], None] | None = None) -> None:
        self.pre_input_hook = hook


@pytest.fixture
def readline(monkeypatch: pytest.MonkeyPatch) -> Readline:
    module = Readline()
    monkeypatch.setitem(sys.modules, "readline", module)
    return module


@pytest.fixture
def background(readline: Readline) -> Iterator[terminal.Background]:
    sigint = signal.getsignal(signal.SIGINT)
    bg = terminal.Background()
    try:
        yield bg
    finally:
        bg.close()
        signal.signal(signal.SIGINT, sigint)


class Screen:
    """`sys.stdout` as a pseudo-terminal that a slow reader drains (a write of a large block blocks)."""

    def __init__(self) -> None:
        self.reader, self.writer = os.openpty()
        tty.setraw(self.writer)  # the text as written: no `\n` turned into `\r\n`
        self.stdout = open(self.writer, "w", closefd=False)  # noqa: SIM115 (closed in `close`)
        self.received = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := self._read():
            with self.lock:
                self.received.extend(chunk)
            time.sleep(0.001)

    def _read(self) -> bytes:
        try:
            return os.read(self.reader, 4096)
        except OSError:  # EIO: the terminal's other side is closed
            return b""

    def shows(self) -> str:
        with self.lock:
            return self.received.decode()

    @contextlib.contextmanager
    def as_stdout(self) -> Iterator[None]:
        """In the test's body: pytest's capture sets `sys.stdout` again after the fixtures' set-up."""
        saved, sys.stdout = sys.stdout, self.stdout
        try:
            yield
        finally:
            sys.stdout = saved

    def close(self) -> None:
        self.stdout.close()
        os.close(self.writer)
        self.thread.join(5)
        os.close(self.reader)


@pytest.fixture
def screen() -> Iterator[Screen]:
    s = Screen()
    try:
        yield s
    finally:
        s.close()


def readline_input(
    screen: Screen, readline: Readline, ending: str, before_the_prompt: Callable[[], object] = lambda: True
) -> Callable[[str], str]:
    """`input()` as readline does it: once `before_the_prompt()` is true it draws the prompt, calls the pre-input
    hook, then waits for a key (a wait signal handlers interrupt) until the screen ends with `ending`."""

    def readline_like_input(prompt: str) -> str:
        until_sync(before_the_prompt, interval=0.005)
        screen.stdout.write(prompt)
        screen.stdout.flush()
        if readline.pre_input_hook is not None:
            readline.pre_input_hook()
        until_sync(lambda: screen.shows().endswith(ending), interval=0.005, what=f"the screen ends with {ending!r}")
        return "typed"

    return readline_like_input


def when(background: terminal.Background, ready: Callable[[], bool], then: Callable[[], None]) -> None:
    """Run `then` on the loop thread once `ready()` (checked there)."""

    def check() -> None:
        if ready():
            then()
        else:
            background.loop.call_later(0.005, check)

    background.loop.call_soon_threadsafe(check)


def blocks(background: terminal.Background, *texts: str) -> Callable[[], None]:
    def print_them() -> None:
        for text in texts:
            background.print_above_prompt(text, PROMPT)

    return print_them


def test_blocks_at_the_prompt_read_what_was_typed_on_the_main_thread(
    readline: Readline, background: terminal.Background, screen: Screen, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = '\r\x1b[K{"id": 1}\nrpc> sess\r\x1b[K{"id": 2}\nrpc> sess'
    monkeypatch.setattr(builtins, "input", readline_input(screen, readline, shown))
    with screen.as_stdout():
        when(background, lambda: screen.shows() == PROMPT, blocks(background, '{"id": 1}', '{"id": 2}'))
        assert terminal.read_line(PROMPT) == "typed"

    assert screen.shows() == PROMPT + shown  # each block over the prompt's line, the prompt drawn again below it
    assert set(readline.readers) == {threading.main_thread()}


def test_a_block_before_readline_drew_the_prompt_comes_below_it(
    readline: Readline, background: terminal.Background, screen: Screen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main thread is in `read_line` but readline has not drawn the prompt yet: the block is printed by the
    pre-input hook, after the prompt, not split into it or above a prompt drawn twice."""
    queued = threading.Event()

    def block() -> None:
        background.print_above_prompt("an answer", PROMPT)
        queued.set()

    monkeypatch.setattr(builtins, "input", readline_input(screen, readline, "rpc> sess", queued.is_set))
    with screen.as_stdout():
        when(background, terminal.reading, block)
        assert terminal.read_line(PROMPT) == "typed"
    assert screen.shows() == "rpc> \r\x1b[Kan answer\nrpc> sess"
    assert readline.readers == [threading.main_thread()]


def test_a_large_block_at_the_prompt_is_printed_whole(
    readline: Readline, background: terminal.Background, screen: Screen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many signals the main thread gets while the block's write waits for the reader."""
    block = "x" * 500_000
    monkeypatch.setattr(builtins, "input", readline_input(screen, readline, "\nrpc> sess"))
    with screen.as_stdout():
        when(background, lambda: screen.shows() == PROMPT, blocks(background, block))
        assert terminal.read_line(PROMPT) == "typed"
    assert screen.shows() == f"rpc> \r\x1b[K{block}\nrpc> sess"


def test_away_from_the_prompt_a_block_is_printed_as_it_is(
    readline: Readline, background: terminal.Background, screen: Screen
) -> None:
    done = threading.Event()

    def block() -> None:
        background.print_above_prompt("an answer", PROMPT)
        done.set()

    with screen.as_stdout():
        background.loop.call_soon_threadsafe(block)
        assert done.wait(5)
    until_sync(lambda: screen.shows() == "an answer\n", what="the answer on the screen")
    assert readline.readers == []
