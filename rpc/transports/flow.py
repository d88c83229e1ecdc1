"""Outbound flow control and the stall rule, one object shared by every transport (R-LIM
`max_outbound_buffer_bytes`, `outbound_stall_secs`), after uvicorn's `flow_control.py`.

A transport tells `FlowControl` only about transitions, never about single frames:

  * `pause()` when its queued output goes above the high-water mark (the stream's `pause_writing`, the
    WebSocket's queue crossing `max_outbound_buffer_bytes`): producers now wait in `wait()`, and the stall
    timer is armed;
  * `resume()` when the output drains below the mark again: producers go on, the timer is disarmed;
  * `close()` when the connection ends: waiting producers wake (and see the closed connection).

While paused one timer runs, `POLLS` times per period. Each time it reads the transport's progress counter (bytes
that left the daemon towards the peer) and remembers when it last saw that move; once it has not moved for
`outbound_stall_secs`, the connection is dropped (`on_stall`, an abort: what is queued cannot be delivered) and one
warning is logged, with the peer's label and never any frame content. So a connection whose queued output stays
above the limit with no progress is closed whether or not a producer is waiting (a few large answers queued at once
count too), at most a `1/POLLS` period late. Watching whole periods instead let a peer that read a little at the
start of one stay up to twice the period (found by benchmarks/soak.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["POLLS", "FlowControl"]

log = logging.getLogger("zeroclaw.rpc")

POLLS = 4


def _no_progress() -> int:
    return 0


def _nothing() -> None:
    return None


class FlowControl:
    __slots__ = ("_label", "_mark", "_on_stall", "_progress", "_secs", "_since", "_timer", "_writable", "paused")

    def __init__(self, secs: float, *, progress: Callable[[], int], on_stall: Callable[[], None], label: str) -> None:
        """`progress()` counts bytes delivered towards the peer (any value that only moves when output drains);
        `on_stall()` drops the connection without flushing; `label` names the peer in the log line."""
        self._secs = secs
        self._progress = progress
        self._on_stall = on_stall
        self._label = label
        self._timer: asyncio.TimerHandle | None = None
        self._mark = 0
        self._since = 0.0  # the loop time at which progress was last seen to move (or the pause began)
        self._writable = asyncio.Event()
        self._writable.set()
        self.paused = False  # an attribute, not a property: transports read it once per frame

    @property
    def watching(self) -> bool:
        """The stall timer is armed."""
        return self._timer is not None

    def pause(self) -> None:
        """Queued output went above the high-water mark: producers wait, the stall timer starts."""
        self.paused = True
        self._writable.clear()
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._mark, self._since = self._progress(), loop.time()
            self._timer = loop.call_later(self._secs / POLLS, self._expired)

    def resume(self) -> None:
        """Queued output is back under the mark."""
        self.paused = False
        self._writable.set()
        self._disarm()

    def close(self) -> None:
        """The connection ended: wake every producer, stop watching, and let go of the transport's callbacks (bound
        methods of the transport that owns this object: kept, the two would be a cycle that only the cyclic GC
        frees, docs/limits.md "Garbage")."""
        self.paused = False
        self._writable.set()
        self._disarm()
        self._progress = _no_progress
        self._on_stall = _nothing

    async def wait(self) -> None:
        """Return once output may be queued again, or the connection has ended (the caller checks which)."""
        await self._writable.wait()

    def _disarm(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _expired(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        progress, now = self._progress(), loop.time()
        if progress != self._mark:  # slow but moving
            self._mark, self._since = progress, now
        if now - self._since < self._secs:
            self._timer = loop.call_later(self._secs / POLLS, self._expired)
            return
        log.warning(
            "closing connection %s: its queued output stayed above max_outbound_buffer_bytes with no progress "
            "for %g s (outbound_stall_secs)",
            self._label,
            self._secs,
        )
        self._on_stall()
