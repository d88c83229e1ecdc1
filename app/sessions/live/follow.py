"""Each watcher of a session fed at its own pace from the session's replay buffer (R-MULTI-2, R-LIM).

The client that prompted paces its turn (its outbound backpressure makes the turn wait, R-LIM). Every other
attached client has a `Follower`: a cursor (the last seq it was sent) and, while it is behind, one task that sends
it what the buffer holds after the cursor. A watcher that stops reading stalls its own task only, until the stall
rule cuts it off; one that falls behind what is retained is cut off at once (it reattaches and is told `gap`),
never sent a hole.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from app.sessions.events import SessionEvent
from app.sessions.live.sink import UpdateSink

__all__ = ["Followed", "Follower"]

log = logging.getLogger("zeroclaw.sessions")


class Followed(Protocol):
    """What a follower reads of the session it follows (`LiveSession` is one): its numbering and replay buffer."""

    @property
    def seq(self) -> int: ...

    def events_after(self, seq: int) -> list[SessionEvent] | None: ...

    def frames_after(self, seq: int) -> list[bytes] | None: ...

    def unwatch(self, sink: UpdateSink) -> None: ...


class Follower:
    """One watcher's place in a session's updates. It holds no reference to the session: a session dropped with
    watchers left is freed by reference counting alone (docs/limits.md "Garbage"); its sending task holds it
    while it runs."""

    __slots__ = ("_task", "cursor", "sink")

    def __init__(self, sink: UpdateSink, cursor: int) -> None:
        self.sink = sink
        self.cursor = cursor  # the last seq this watcher has been sent
        self._task: asyncio.Task[None] | None = None

    def poke(self, live: Followed) -> None:
        """New updates were numbered: send them unless a send is under way (it goes on to these)."""
        if self.cursor < live.seq and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._catch_up(live))

    def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None  # a cancelled task's exception holds its frame, and with it this follower

    async def _catch_up(self, live: Followed) -> None:
        sink = self.sink
        while self.cursor < live.seq:
            events = live.events_after(self.cursor)
            if events is None:
                log.warning("a session watcher fell behind the updates kept for replay; cutting it off")
                live.unwatch(sink)
                sink.drop()
                return
            try:
                await sink.send_updates(events, live.frames_after(self.cursor))
            except Exception:  # gone: it stops receiving, nobody else notices
                live.unwatch(sink)
                return
            self.cursor = events[-1]["seq"]
