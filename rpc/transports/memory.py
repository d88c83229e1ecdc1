"""An in-memory transport for tests: frames in with `feed()`, frames out in `sent`.

Frames go through `Connection.receive` like the socket's, so tests cover the same hot path; a frame fed while
the connection is saturated waits (as it would in the socket) until `resume()`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from rpc.transports.base import Acceptor, ConnectionClosed, Peer, Receiver

__all__ = ["MemoryTransport"]


class MemoryTransport:
    def __init__(self, dispatcher: Acceptor, peer: Peer | None = None) -> None:
        self.sent: list[bytes] = []
        self.closed = False
        self.paused = False
        self.resumes = 0
        self.waiting: list[bytes] = []  # frames fed while the connection was saturated
        self._writable = asyncio.Event()
        self._writable.set()
        self._arrived = asyncio.Event()
        self.connection: Receiver | None = None
        self.dispatcher = dispatcher
        self.connection = dispatcher.accept(self, peer or Peer("memory", uid=0))

    # FrameTransport
    def send(self, frame: bytes) -> None:
        if not self.closed:
            self.sent.append(frame)
            self._arrived.set()

    def send_many(self, frames: list[bytes]) -> None:
        for frame in frames:
            self.send(frame)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.connection is not None:
                self.connection.lost()

    def resume(self) -> None:
        self.resumes += 1
        self._take()

    @property
    def writing_paused(self) -> bool:
        return not self._writable.is_set()

    async def wait_writable(self) -> None:
        await self._writable.wait()
        if self.closed:
            raise ConnectionClosed

    def queued_bytes(self) -> int:
        return self.queued

    # test helpers
    queued = 0  # what `queued_bytes` reports: a test sets it

    def set_writing_paused(self, paused: bool) -> None:
        if paused:
            self._writable.clear()
        else:
            self._writable.set()

    def feed(self, frame: Any) -> None:
        assert self.connection is not None
        self.waiting.append(frame if isinstance(frame, bytes) else orjson.dumps(frame))
        self._take()

    def _take(self) -> None:
        connection = self.connection
        while connection is not None and self.waiting and not self.closed:
            frame = self.waiting.pop(0)
            if not connection.receive(frame):
                self.waiting.insert(0, frame)
                return

    def messages(self) -> list[Any]:
        return [orjson.loads(frame) for frame in self.sent]

    async def next_message(self, timeout: float = 2.0) -> Any:
        async def wait() -> Any:
            while not self.sent:
                self._arrived.clear()
                await self._arrived.wait()
            return orjson.loads(self.sent.pop(0))

        return await asyncio.wait_for(wait(), timeout)
