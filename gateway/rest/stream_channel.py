"""The channel of an HTTP response that streams a session's updates: `GET /api/sessions/{id}/events` (SSE) and a
streamed `POST /v1/chat/completions`.

Updates are queued for the response's generator, which writes them as the reader takes them. The queue holds
`QUEUE_FRAMES` ahead of the reader; a sender that waits longer than `outbound_stall_secs` for room cuts the reader
off (the stall rule every surface has, R-LIM), so a reader that stops reading costs at most that queue, not the rest
of the turn. The cut-off is counted and logged at once (`count_stall`); the response ends when its generator is
written to again (it waits on the reader), with what the route says of a stream cut short.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from starlette.requests import Request

from rpc.core.context import NoClient
from rpc.core.dispatcher import Dispatcher
from rpc.transports.base import ConnectionClosed

__all__ = ["QUEUE_FRAMES", "StreamChannel", "count_stall"]

log = logging.getLogger("zeroclaw.gateway")

QUEUE_FRAMES = 1024  # frames written ahead of the reader before the sender waits (and the stall clock runs)


class StreamChannel(NoClient):
    """An HTTP caller that reads a session's updates as a stream and can answer nothing.

    `bounded` is off while `session/attach` replays to it (at most the replay buffer, sent with no await between),
    then on: from then the queue holds `QUEUE_FRAMES` ahead of the reader.
    """

    __slots__ = ("_callbacks", "_closed", "_on_stall", "_room", "_stall_secs", "bounded", "cut_off", "queue")

    def __init__(
        self, principal_id: str | None, stall_secs: float, on_stall: Callable[[], None], *, bounded: bool = True
    ) -> None:
        super().__init__(principal_id)
        self._on_stall = on_stall
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._room = asyncio.Event()
        self._stall_secs = stall_secs
        self._callbacks: list[Callable[[], None]] = []
        self._closed = False
        self.bounded = bounded
        self.cut_off = False

    @property
    def closed(self) -> bool:  # type: ignore[override]  # NoClient's is a constant
        return self._closed

    async def send_encoded(self, frames: list[bytes]) -> None:
        for frame in frames:
            while self.bounded and self.queue.qsize() >= QUEUE_FRAMES and not self._closed:
                self._room.clear()
                try:
                    await asyncio.wait_for(self._room.wait(), self._stall_secs)
                except TimeoutError:
                    self.cut_off = True
                    self._on_stall()
                    self.drop()
            if self._closed:
                raise ConnectionClosed
            self.queue.put_nowait(frame)

    async def take(self, most: int = 256) -> list[bytes]:
        """The next frames, all that are queued up to `most` (one write for a burst); waits for one. Empty once the
        stream has ended (`drop`)."""
        first = await self.queue.get()
        if first is None:
            return []
        frames = [first]
        while len(frames) < most and not self.queue.empty():
            frame = self.queue.get_nowait()
            if frame is None:
                self.queue.put_nowait(None)  # the end, seen by the next `take`
                break
            frames.append(frame)
        self._room.set()
        return frames

    def when_gone(self, callback: Callable[[], None]) -> None:
        if self._closed:
            callback()
        else:
            self._callbacks.append(callback)

    def drop(self) -> None:
        """End the stream: the reader missed updates that can no longer be sent, stopped reading, or went away, or
        there is nothing more to send."""
        if self._closed:
            return
        self._closed = True
        self.queue.put_nowait(None)
        self._room.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


def count_stall(dispatcher: Dispatcher, request: Request) -> Callable[[], None]:
    """What to do when the stall rule cuts the reader of `request` off: count it (`zeroclaw_stalled_peers_total`)
    and log it once, naming the peer and never what it was sent, as the transports do (rpc/transports/flow.py)."""

    def stalled() -> None:
        dispatcher.state.stalls += 1
        peer = request.client
        log.warning(
            "cutting off HTTP stream %s of %s: it took none of its queued updates for %g s (outbound_stall_secs)",
            f"http:{peer.host}:{peer.port}" if peer else "http:?",
            request.url.path,
            dispatcher.limits.outbound_stall_secs,
        )

    return stalled
