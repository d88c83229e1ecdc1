"""Outbound flow control and the stall rule, one object shared by every transport (R-LIM
`max_outbound_buffer_bytes`, `outbound_stall_secs`), after uvicorn's `flow_control.py`.

A transport tells `FlowControl` only about transitions, never about single frames:

  * `pause()` when its queued output goes above the high-water mark (the stream's `pause_writing`, the
    WebSocket's queue crossing `max_outbound_buffer_bytes`): producers now wait in `wait()`, and the stall
    timer is armed;
  * `resume()` when the output drains below the mark again: producers go on, the timer is disarmed;
  * `close()` when the connection ends: waiting producers wake (and see the closed connection).

While paused one timer runs. When it fires it reads the transport's progress counter (bytes that left the daemon
towards the peer): if that moved, the peer is slow but reading and the next period is watched; if not, the
connection is dropped (`on_stall`, an abort: what is queued cannot be delivered) and one warning is logged, with
the peer's label and never any frame content. So a connection whose queued output stays above the limit with no
progress is closed whether or not a producer is waiting: a few large answers queued at once count too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["FlowControl"]

log = logging.getLogger("zeroclaw.rpc")


class FlowControl:
    __slots__ = ("_label", "_mark", "_on_stall", "_progress", "_secs", "_timer", "_writable", "paused")

    def __init__(self, secs: float, *, progress: Callable[[], int], on_stall: Callable[[], None], label: str) -> None:
        """`progress()` counts bytes delivered towards the peer (any value that only moves when output drains);
        `on_stall()` drops the connection without flushing; `label` names the peer in the log line."""
        self._secs = secs
        self._progress = progress
        self._on_stall = on_stall
        self._label = label
        self._timer: asyncio.TimerHandle | None = None
        self._mark = 0
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
            self._mark = self._progress()
            self._timer = asyncio.get_running_loop().call_later(self._secs, self._expired)

    def resume(self) -> None:
        """Queued output is back under the mark."""
        self.paused = False
        self._writable.set()
        self._disarm()

    def close(self) -> None:
        """The connection ended: wake every producer, stop watching."""
        self.paused = False
        self._writable.set()
        self._disarm()

    async def wait(self) -> None:
        """Return once output may be queued again, or the connection has ended (the caller checks which)."""
        await self._writable.wait()

    def _disarm(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _expired(self) -> None:
        self._timer = None
        progress = self._progress()
        if progress != self._mark:  # slow but moving: watch the next period
            self._mark = progress
            self._timer = asyncio.get_running_loop().call_later(self._secs, self._expired)
            return
        log.warning(
            "closing connection %s: its queued output stayed above max_outbound_buffer_bytes with no progress "
            "for %g s (outbound_stall_secs)",
            self._label,
            self._secs,
        )
        self._on_stall()
