"""What the interactive commands (`zeroclaw chat`, `zeroclaw rpc` with no method) share.

The main thread owns the terminal: it alone calls `input()`, so readline (line editing, history) works as usual
and Ctrl-C arrives as `KeyboardInterrupt` exactly where the person is — at a prompt or while waiting for a turn.
The connection runs on an asyncio loop in a worker thread (`Background`); the loop asks the person a question by
handing an `Ask` to the main thread (`Asker`) and awaiting the answer, and what it prints above a waiting prompt
is printed by the main thread too (`_AbovePrompt`). See docs/cli.md.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import queue
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_STDOUT_CLOSED",
    "INTERRUPT",
    "Ask",
    "Asker",
    "Background",
    "CliError",
    "GuardedStdout",
    "Interrupt",
    "StdoutClosed",
    "ignore_interrupts",
    "leave_quietly",
    "read_line",
    "reading",
    "say",
    "write_out",
]

T = TypeVar("T")

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a command ended by Ctrl-C
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE, what shells report for `cat` when the reader of its output left


class StdoutClosed(Exception):
    """Nobody reads stdout any more (`zeroclaw rpc … | head`): leave quietly, as `cat` does (`leave_quietly`)."""


class CliError(Exception):
    """A failure the command reports as one line on stderr (no traceback) and exits with `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class _Interrupts:
    """Makes every Ctrl-C reach the main thread's `input()`.

    CPython's readline looks for signals only when its `select()` is interrupted; a SIGINT that lands between
    drawing the prompt and entering `select()` would be noticed only after the next key. The loop thread watches
    the signal wakeup fd and, while the main thread is still in that same `input()` call without the handler having
    run, repeats the SIGINT to it (waits on locks and queues are interrupted anyway and need no repeat).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.handled = 0
        self.main = threading.main_thread().ident
        self.read_fd, self.write_fd = os.pipe()
        if sys.platform != "win32":  # always true: made only where pthread_kill exists (`Background`)
            os.set_blocking(self.read_fd, False)
            os.set_blocking(self.write_fd, False)
        self.previous_fd = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        signal.signal(signal.SIGINT, self._handler)
        _reading.sink_supported = True
        loop.call_soon_threadsafe(loop.add_reader, self.read_fd, self._woken)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if _in_finalizer(frame) or _in_readline_hook(frame):
            return  # raised here it would be printed or dropped: not counted, so `_repeat` sends it again
        self.handled += 1
        sink = _reading.sink
        if sink is not None and not _reading.active:
            sink.put(INTERRUPT)  # SimpleQueue.put is safe in a signal handler; the waiting get() returns it
            return
        raise KeyboardInterrupt

    def _woken(self) -> None:  # loop thread
        try:
            data = os.read(self.read_fd, 512)
        except BlockingIOError:
            return
        if not data:  # the write end was closed: the command is leaving
            self.loop.remove_reader(self.read_fd)
            return
        if signal.SIGINT in data and _reading.active:
            self.loop.call_later(0.05, self._repeat, self.handled, _reading.calls)

    def _repeat(self, handled: int, calls: int) -> None:  # loop thread
        still_waiting = self.handled == handled and _reading.active and _reading.calls == calls
        if sys.platform == "win32":  # never made there (`Background`)
            return
        if still_waiting and signal.getsignal(signal.SIGINT) == self._handler and self.main is not None:
            signal.pthread_kill(self.main, signal.SIGINT)  # its wakeup byte schedules the next check

    def close(self) -> None:  # main thread
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(self.previous_fd)
        os.close(self.write_fd)


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether a signal landed in a weakref callback or a `__del__`, where Python ignores what they raise."""
    if frame is None:
        return False
    code = frame.f_code
    return code.co_name == "__del__" or code.co_filename.endswith(("/weakref.py", "/_weakrefset.py"))


def _in_readline_hook(frame: FrameType | None) -> bool:
    """Whether a signal landed in a Python function readline calls (its pre-input hook, `_AbovePrompt`), whose
    exception CPython's readline clears."""
    while frame is not None:
        if frame.f_code is _PROMPT_DRAWN:
            return True
        frame = frame.f_back
    return False


class _AbovePrompt:
    """Prints what the loop thread shows while the main thread waits in `input()`, above the prompt, and draws the
    prompt again below it with what was typed so far.

    readline is not thread-safe: the loop thread reading its line buffer while the main thread's readline reset it
    once aborted the process in glibc's `mbsrtowcs`, and a block written while readline drew its prompt split the
    prompt in two. So at a prompt the loop thread only queues the block and sends SIGUSR1 to the main thread. The
    handler runs in readline's wait for a key, between two of readline's own steps, and prints there; a block
    queued before readline has drawn the prompt is printed by readline's pre-input hook, just after it drew it.
    A signal that lands before readline enters its wait is noticed only at the next key, so it is sent again every
    50 ms until the block is shown.

    The handler writes with `os.write`: a `sys.stdout.write` of a large block inside a signal handler, cut short by
    the next signal, lost the rest of the block.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.main = threading.main_thread().ident
        self.blocks: collections.deque[tuple[str, str]] = collections.deque()
        self.queued = 0  # written by the loop thread only
        self.shown = 0  # written by the main thread only: the two counts never race
        self.printing = False  # (main thread) a signal during the handler's own write must not print in between
        self.retrying = False
        if sys.platform != "win32":  # always true: never made on Windows
            signal.signal(signal.SIGUSR1, self._handler)
        readline = sys.modules.get("readline")
        if readline is not None and hasattr(readline, "set_pre_input_hook"):
            readline.set_pre_input_hook(self._prompt_drawn)
            _reading.hooked = True

    def show(self, text: str, prompt: str) -> None:  # loop thread
        if not _reading.active and self.queued == self.shown:
            write_out(text + "\n")  # nobody at the prompt and nothing ahead of it in the queue
            return
        self.blocks.append((text, prompt))
        self.queued += 1
        self._signal()
        if not self.retrying:
            self.retrying = True
            self.loop.call_later(0.05, self._retry)

    def _signal(self) -> None:  # loop thread
        if self.main is not None and sys.platform != "win32":  # always true: never made on Windows
            signal.pthread_kill(self.main, signal.SIGUSR1)

    def _retry(self) -> None:  # loop thread
        if self.shown == self.queued:
            self.retrying = False
            return
        self._signal()
        self.loop.call_later(0.05, self._retry)

    def _prompt_drawn(self) -> None:  # main thread, inside readline
        _reading.drawn = True
        self._print()

    def _handler(self, signum: int, frame: FrameType | None) -> None:  # main thread
        if _reading.active and not _reading.drawn:
            return  # readline is about to draw the prompt: its pre-input hook prints the blocks below it
        self._print()

    def _print(self) -> None:  # main thread
        if self.printing:
            return  # the outer call goes on with the blocks queued meanwhile
        self.printing = True
        try:
            while self.blocks:
                text, prompt = self.blocks.popleft()
                try:
                    if _reading.active:  # over the prompt's line, and the prompt with what was typed below it
                        _write_all(f"\r\x1b[K{text}\n{prompt}{typed_so_far()}")
                    else:
                        _write_all(text + "\n")
                finally:
                    self.shown += 1
        finally:
            self.printing = False

    def close(self) -> None:  # main thread
        # Ignored, not the default (which ends the process): a signal sent just before may still arrive.
        if sys.platform != "win32":  # always true: never made on Windows
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        readline = sys.modules.get("readline")
        if _reading.hooked and readline is not None:
            readline.set_pre_input_hook()
            _reading.hooked = False


_PROMPT_DRAWN = _AbovePrompt._prompt_drawn.__code__


def _write_all(text: str) -> None:
    """`text` on stdout with `os.write`, the part a signal cut short written again; `StdoutClosed` when its reader
    is gone."""
    data = text.encode(sys.stdout.encoding or "utf-8", "replace")
    try:
        sys.stdout.flush()  # what went through `sys.stdout` first stays first
        fd = sys.stdout.fileno()
        while data:
            data = data[os.write(fd, data) :]
    except BrokenPipeError:
        raise StdoutClosed from None


def typed_so_far() -> str:
    """What was typed at the prompt and not yet entered (readline's buffer). Main thread only (`_AbovePrompt`)."""
    readline = sys.modules.get("readline")
    if readline is None:
        return ""
    try:
        return str(readline.get_line_buffer())
    except Exception:  # some builds (libedit) may not have it: redraw the prompt alone
        return ""


class Background:
    """An asyncio loop on a daemon worker thread, for the interactive commands. Create it on the main thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="zeroclaw-io", daemon=True)
        self._thread.start()
        posix = sys.platform != "win32" and threading.current_thread() is threading.main_thread()
        self._interrupts = _Interrupts(self.loop) if posix else None
        self._above = _AbovePrompt(self.loop) if posix else None

    def print_above_prompt(self, text: str, prompt: str) -> None:
        """Show `text` (called on the loop thread). At a prompt it replaces the prompt's line, and the prompt with
        what was typed so far is drawn again below it."""
        if self._above is not None:
            self._above.show(text, prompt)
        elif _reading.active:  # Windows: no readline, so nothing typed can be drawn again
            write_out(f"\r\x1b[K{text}\n{prompt}")
        else:
            write_out(text + "\n")

    def _run(self) -> None:
        # Ctrl-C must reach the main thread, which waits in readline; threads started here inherit the mask.
        if sys.platform != "win32":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        self.loop.run_forever()

    def interrupt_reading(self) -> None:
        """The connection is gone (called on the loop thread): interrupt the main thread's `input()`, now or as
        soon as it is in one, so the command can say so and leave instead of waiting for a line."""
        if self._interrupts is None:
            return
        last_call = -1

        def check() -> None:
            nonlocal last_call
            if _reading.active and _reading.calls != last_call:
                last_call = _reading.calls
                os.kill(os.getpid(), signal.SIGINT)
            self.loop.call_later(0.05, check)

        check()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait. Ctrl-C interrupts the wait (`KeyboardInterrupt`), not the coroutine."""
        return self.submit(coro).result(timeout)

    def close(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(cancel_all(), timeout=2)
        if self._interrupts is not None:
            self._interrupts.close()
        if self._above is not None:
            self._above.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(2)
        if not self._thread.is_alive():
            self.loop.close()
            if self._interrupts is not None:
                os.close(self._interrupts.read_fd)


@dataclass
class Ask:
    """A question from the loop thread for the person at the terminal."""

    prompt: str
    future: asyncio.Future[str | None]
    loop: asyncio.AbstractEventLoop

    def answer(self, text: str | None) -> None:
        def settle() -> None:
            if not self.future.done():
                self.future.set_result(text)

        self.loop.call_soon_threadsafe(settle)

    def withdraw(self) -> None:
        """Nobody will answer (the person left): the asking coroutine gets `CancelledError`, and sends nothing."""
        self.loop.call_soon_threadsafe(self.future.cancel)


class Interrupt:
    """Ctrl-C while the main thread waits on an `Asker` (not at a prompt), delivered as a queue item."""


INTERRUPT = Interrupt()


@dataclass
class Asker:
    """The queue between the loop thread (which asks) and the main thread (which reads the terminal).

    Inside `interrupts()`, a Ctrl-C that is not at a prompt arrives as the item `INTERRUPT` instead of as a
    `KeyboardInterrupt` at whatever line the main thread happens to run.
    """

    items: queue.SimpleQueue[Ask | Interrupt | None] = field(default_factory=queue.SimpleQueue)

    @contextlib.contextmanager
    def interrupts(self) -> Iterator[None]:
        _reading.sink = self.items if _reading.sink_supported else None
        try:
            yield
        finally:
            _reading.sink = None

    async def ask(self, prompt: str) -> str | None:
        """Ask at the terminal (called on the loop thread): the answer, or None for end of input (Ctrl-D)."""
        loop = asyncio.get_running_loop()
        item = Ask(prompt, loop.create_future(), loop)
        self.items.put(item)
        return await item.future

    def done(self) -> None:
        """Wake the main thread: the work it waits for is over."""
        self.items.put(None)


class _Reading:
    """Whether the main thread is in `input()`, how many calls it has made, and where a Ctrl-C outside `input()`
    goes (read by `_Interrupts`)."""

    active = False
    calls = 0
    sink: queue.SimpleQueue[Ask | Interrupt | None] | None = None
    sink_supported = False  # only with `_Interrupts`' handler installed
    hooked = False  # readline's pre-input hook says when the prompt is drawn (`_AbovePrompt`)
    drawn = False  # readline has drawn the prompt of the current `input()` (always, without the hook)


_reading = _Reading()


def read_line(prompt: str) -> str | None:
    """`input(prompt)`; None at end of input. Ctrl-C raises `KeyboardInterrupt`."""
    _reading.calls += 1
    _reading.drawn = not _reading.hooked
    _reading.active = True
    try:
        return input(prompt)
    except EOFError:
        return None
    except BrokenPipeError:  # the prompt went to a stdout nobody reads (`zeroclaw chat … | head -1`)
        raise StdoutClosed from None
    finally:
        _reading.active = False


def reading() -> bool:
    """Whether the main thread waits in `read_line` (at a prompt) right now."""
    return _reading.active


def write_out(text: str) -> None:
    """`text` on stdout, flushed; `StdoutClosed` when its reader is gone."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise StdoutClosed from None


class GuardedStdout:
    """`sys.stdout` as a rich `Console`'s file: a write or flush whose reader is gone raises `StdoutClosed`, not
    `BrokenPipeError`, which is a `ConnectionError` and would be taken for the daemon's connection."""

    def write(self, text: str) -> int:
        try:
            return sys.stdout.write(text)
        except BrokenPipeError:
            raise StdoutClosed from None

    def flush(self) -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise StdoutClosed from None

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)


def leave_quietly() -> int:
    """After `StdoutClosed`: stdout goes to the null device, so that nothing (the interpreter's last flush
    included) complains about it; the exit status `cat` would get (docs/cli.md)."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return EXIT_STDOUT_CLOSED


def ignore_interrupts() -> None:
    """From here on the command is leaving: a second Ctrl-C must not interrupt the clean-up."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def say(message: str) -> None:
    """One line for the person on stderr."""
    with contextlib.suppress(OSError, ValueError):  # stdout may be closed; stderr still tells
        sys.stdout.flush()
    print(message, file=sys.stderr, flush=True)
