"""The daemon's signals: SIGINT and SIGTERM (and Ctrl-Break on Windows) stop it, SIGHUP reloads config.toml.

`loop.add_signal_handler` where the loop has it (Unix: asyncio's selector loop, uvloop). Windows' loops raise
`NotImplementedError` there, so a plain `signal.signal` handler hands the call to the loop instead: it runs in the
main thread between two bytecodes, and `call_soon_threadsafe` both schedules the call and wakes the loop (the
Proactor loop also wakes on a signal by itself, through its `signal.set_wakeup_fd` socket).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from types import FrameType

__all__ = ["install_signal_handlers"]

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None

log = logging.getLogger("zeroclaw.daemon")


def install_signal_handlers(
    loop: asyncio.AbstractEventLoop, stop: Callable[[], None], *, reload: Callable[[], None] | None = None
) -> Callable[[], None]:
    """Call `stop` on SIGINT, SIGTERM and (Windows) SIGBREAK, `reload` on SIGHUP (not Windows).

    Returns the undo. Handlers the loop took stay until it closes (asyncio removes them then), so the undo does
    nothing for them; the `signal.signal` fallback's are put back to what they were, since they would outlive
    the loop."""
    wanted: list[tuple[signal.Signals, Callable[[], None]]] = [
        (signal.SIGINT, _saying(signal.SIGINT, stop)),
        (signal.SIGTERM, _saying(signal.SIGTERM, stop)),
    ]
    if sys.platform == "win32":
        wanted.append((signal.SIGBREAK, _saying(signal.SIGBREAK, stop)))  # Ctrl-Break
    elif reload is not None:  # no SIGHUP on Windows, where the stat poll alone sees edits
        wanted.append((signal.SIGHUP, reload))
    added: list[signal.Signals] = []
    try:
        for sig, callback in wanted:
            loop.add_signal_handler(sig, callback)
            added.append(sig)
    except NotImplementedError:  # Windows' event loops
        for sig in added:
            loop.remove_signal_handler(sig)
        return _install_fallback(loop, wanted)
    return _nothing


def _saying(sig: signal.Signals, stop: Callable[[], None]) -> Callable[[], None]:
    """`stop`, after the one line saying why the daemon stops (a daemon never stops without a word)."""

    def stopping() -> None:
        log.info("stopping: %s received", sig.name)
        stop()

    return stopping


def _install_fallback(
    loop: asyncio.AbstractEventLoop, wanted: list[tuple[signal.Signals, Callable[[], None]]]
) -> Callable[[], None]:
    previous: list[tuple[signal.Signals, _Handler]] = []

    def handler_for(callback: Callable[[], None]) -> Callable[[int, FrameType | None], None]:
        def handle(_signum: int, _frame: FrameType | None) -> None:
            if not loop.is_closed():  # a signal racing the loop's end: nothing left to stop
                loop.call_soon_threadsafe(callback)

        return handle

    for sig, callback in wanted:
        previous.append((sig, signal.signal(sig, handler_for(callback))))

    def undo() -> None:
        for sig, handler in reversed(previous):
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        previous.clear()

    return undo


def _nothing() -> None:
    return None
