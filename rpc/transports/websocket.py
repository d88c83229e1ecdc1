"""The WebSocket transport (R-GW-4, R-ARCH-1): one JSON-RPC message per text frame, the same dispatcher.

It adapts one accepted WebSocket to `FrameTransport` and mirrors `stream.NdjsonProtocol`'s flow control:
  * inbound — while the connection is saturated (in-flight cap, `initialize` running, peer not reading) the
    reader does not call `receive()`, so the ASGI server stops reading the socket (TCP backpressure);
  * outbound — a single writer task drains a queue (nothing else writes to the socket); above
    `max_outbound_buffer_bytes` queued, `writing_paused` is true and producers wait in `wait_writable()`. Flow
    control and the stall rule are the stream's (`flow.FlowControl`): paused when the queue crosses the limit,
    resumed when the writer brings it back under, so a peer that makes no progress for `outbound_stall_secs` is
    dropped whether or not a producer waits (answers queued at once count too). The queue counts a frame until
    the socket has taken it, and producers wait before they add, so it holds at most the limit plus one frame
    (or one batch of a turn's updates); the answer of a call that finishes meanwhile waits too (`Connection`).

It depends only on `WebSocketLike` (ASGI `receive()` messages, `send_text`, `close`), which Starlette's
`WebSocket` satisfies; `rpc/` never imports Starlette, the gateway passes the socket in.

Frames: a text message's UTF-8 byte length is checked against `max_frame_bytes` (over it → `-32600`
`frame_too_large` with `data.limit`, then close 1009). A binary message is answered `-32700` (like undecodable
input, R-WIRE-3) and the socket stays usable. Messages beyond `ws_max_size()` are refused by the WebSocket
library itself (close 1009, no JSON-RPC error frame) before they are buffered.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rpc.transports.base import Acceptor, ConnectionClosed, Peer, Receiver
from rpc.transports.flow import FlowControl

__all__ = [
    "CLOSE_NORMAL",
    "CLOSE_POLICY",
    "CLOSE_TOO_BIG",
    "CLOSE_TRY_LATER",
    "WS_SIZE_MARGIN",
    "WebSocketLike",
    "WebSocketTransport",
    "bearer_token",
    "websocket_peer",
    "ws_max_size",
]

log = logging.getLogger("zeroclaw.rpc")

CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008  # refused origin; a peer dropped for not reading
CLOSE_TOO_BIG = 1009  # frame over max_frame_bytes (R-WIRE-2)
CLOSE_TRY_LATER = 1013  # connection cap reached (-32005 `connections` is sent first)

# The library refuses messages over `ws_max_size` itself (close 1009, no error frame): the margin
# lets our check answer a message just over `max_frame_bytes`.
WS_SIZE_MARGIN = 64 * 1024
MAX_TOKEN_CHARS = 512


def ws_max_size(max_frame_bytes: int) -> int:
    """The WebSocket library's message-size cap for a given frame limit (uvicorn's `ws_max_size`)."""
    return max_frame_bytes + WS_SIZE_MARGIN


class WebSocketLike(Protocol):
    """What the transport needs from an accepted WebSocket (Starlette's `WebSocket` satisfies it)."""

    async def receive(self) -> Mapping[str, Any]:
        """The next ASGI message: `websocket.receive` (`text` or `bytes`) or `websocket.disconnect`."""
        ...

    async def send_text(self, data: str) -> None: ...

    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None (other schemes, garbage, oversize)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS or " " in token:
        return None
    return token


def websocket_peer(client: tuple[str, int] | None, authorization: str | None) -> Peer:
    """`ws:<ip>:<port>` (IPv6 in brackets), remote, with the upgrade's bearer token if any (R-SEC-3, R-GW-4)."""
    if client is None:
        label = "ws:unknown"
    else:
        host, port = client[0], client[1]
        label = f"ws:[{host}]:{port}" if ":" in host else f"ws:{host}:{port}"
    return Peer(label, remote=True, bearer_token=bearer_token(authorization))


class WebSocketTransport:
    """One accepted WebSocket as a `FrameTransport`; `run()` serves it until either side closes."""

    def __init__(
        self,
        websocket: WebSocketLike,
        dispatcher: Acceptor,
        peer: Peer,
        *,
        abort_connection: Callable[[], None] | None = None,
    ) -> None:
        self._ws = websocket
        self._abort_connection = abort_connection  # the server's: drop the TCP connection, unflushed
        self._dispatcher = dispatcher
        self.peer = peer
        limits = dispatcher.limits
        self._frame_limit = limits.max_frame_bytes
        self._high_water = limits.max_outbound_buffer_bytes
        self._flow = FlowControl(
            limits.outbound_stall_secs, progress=self._progress, on_stall=self._stalled, label=peer.label
        )
        self._conn: Receiver | None = None
        self._out: deque[bytes] = deque()
        self._queued = 0  # bytes queued and not yet handed to the socket
        self._sent = 0  # bytes handed to the socket so far: progress, for the stall rule
        self._wake = asyncio.Event()  # the writer has something to do
        self._readable = asyncio.Event()  # the reader may take the next message
        self._closing = False  # close() was called or the peer is gone: nothing new is queued
        self._gone = False  # nothing more can be written
        self._close_code = CLOSE_NORMAL
        self._writer: asyncio.Task[None] | None = None
        self._lost = False
        self._too_big = False  # an oversize message arrived: answer what came before it, then close 1009
        self._held: bytes | None = None  # a message the connection could not take yet

    async def run(self) -> None:
        """Register with the dispatcher, pump both directions, and return once the socket is done."""
        self._conn = self._dispatcher.accept(self, self.peer)
        if self._conn is None:
            self._close_code = CLOSE_TRY_LATER  # accept() queued the -32005 frame and called close()
        self._writer = asyncio.create_task(self._write_loop())
        reader = asyncio.create_task(self._read_loop()) if self._conn is not None else None
        try:
            await asyncio.wait({self._writer})  # not `await task`: a writer cancelled by _abort() is normal
        finally:
            self._mark_gone()
            self._connection_lost()
            tasks = [t for t in (reader, self._writer) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            # A cancelled writer's exception holds this transport, as the connection does: dropped
            # here, all is freed at once, not by the cyclic GC (docs/limits.md "Garbage").
            self._writer = None
            self._conn = None

    # -- FrameTransport

    def send(self, frame: bytes) -> None:
        if self._closing:
            return
        self._out.append(frame)
        self._queued += len(frame)
        if self._queued > self._high_water and not self._flow.paused:
            self._flow.pause()
        self._wake.set()

    def send_many(self, frames: list[bytes]) -> None:
        for frame in frames:
            self.send(frame)

    def close(self, code: int = CLOSE_NORMAL) -> None:
        """Flush what is queued, then close the WebSocket with `code`."""
        if self._closing:
            return
        self._closing = True
        self._close_code = code
        self._wake.set()
        self._readable.set()

    def resume(self) -> None:
        self._readable.set()  # the reader re-checks `saturated` itself
        if self._too_big:
            self._close_when_idle()

    @property
    def writing_paused(self) -> bool:
        return self._flow.paused

    def queued_bytes(self) -> int:
        return self._queued

    async def wait_writable(self) -> None:
        # No timer: the stall rule (`FlowControl`) drops a peer that stopped reading, and
        # `_mark_gone` wakes this wait.
        while self._flow.paused and not self._closing:
            await self._flow.wait()
        if self._closing:
            raise ConnectionClosed

    # -- internals

    async def _read_loop(self) -> None:
        conn = self._conn
        assert conn is not None
        try:
            while not self._closing and not self._too_big:
                if conn.saturated:
                    self._readable.clear()
                    await self._readable.wait()
                    continue
                if self._held is not None:
                    held, self._held = self._held, None
                    if not conn.receive(held):
                        self._held = held
                    continue
                message = await self._ws.receive()
                kind = message.get("type")
                if kind == "websocket.disconnect":
                    break
                if kind == "websocket.receive":
                    self._on_message(message)
        except Exception as exc:  # the server reports a vanished peer as an exception on some paths
            log.debug("WebSocket receive from %s ended: %s", self.peer.label, type(exc).__name__)
        if not self._closing and not self._too_big:
            self._abort()  # the peer left: nothing queued can be delivered any more

    def _on_message(self, message: Mapping[str, Any]) -> None:
        conn = self._conn
        assert conn is not None
        text = message.get("text")
        if isinstance(text, str):
            # Every character is at least one UTF-8 byte: a long string is refused before it is encoded.
            data = b"" if len(text) > self._frame_limit else text.encode("utf-8", "surrogatepass")
            if len(text) > self._frame_limit or len(data) > self._frame_limit:
                self._too_large()
            elif not conn.receive(data):  # lone surrogates fail to decode there: -32700
                self._held = data  # saturated since the reader looked: taken once it can be
            return
        data_bytes = message.get("bytes")
        if isinstance(data_bytes, bytes | bytearray):
            if len(data_bytes) > self._frame_limit:
                self._too_large()
                return
            # R-WIRE-1: JSON-RPC travels in text frames; a binary one is answered like undecodable input.
            self.send(self._dispatcher.refusal("not_text", self._frame_limit))

    def _too_large(self) -> None:
        """Read nothing more; once every message before this one is answered, `frame_too_large` and close 1009.
        Closing at once cancelled the calls still running (regression, found by the fuzz kit)."""
        self._too_big = True
        if self._conn is not None:
            self._conn.input_ended()  # it can answer nothing more: what we asked it fails now
        self._close_when_idle()

    def _close_when_idle(self) -> None:
        if self._closing or (self._conn is not None and not self._conn.idle):
            return
        self.send(self._dispatcher.refusal("frame_too_large", self._frame_limit))
        self.close(CLOSE_TOO_BIG)

    async def _write_loop(self) -> None:
        try:
            while True:
                while self._out and not self._gone:
                    frame = self._out[0]
                    await self._ws.send_text(frame.decode("utf-8"))
                    self._out.popleft()
                    self._queued -= len(frame)
                    self._sent += len(frame)
                    if self._flow.paused and self._queued <= self._high_water:
                        self._flow.resume()
                        self.resume()
                if self._gone:
                    return
                if self._closing:
                    await self._ws.close(self._close_code)
                    return
                self._wake.clear()
                await self._wake.wait()
        except Exception as exc:  # the peer vanished under a send or the close
            log.debug("WebSocket send to %s ended: %s", self.peer.label, type(exc).__name__)

    def _progress(self) -> int:
        return self._sent

    def _mark_gone(self) -> None:
        self._closing = True
        self._gone = True
        self._out.clear()
        self._queued = 0
        self._wake.set()
        self._readable.set()
        self._flow.close()  # wake producers so they see the closed connection

    def _stalled(self) -> None:
        if self._conn is not None:
            self._conn.stalled()
        self._abort()
        if self._abort_connection is not None:
            self._abort_connection()  # a close would wait on the peer that does not read

    def _abort(self) -> None:
        """Drop the peer without flushing: the writer stops, `run()` returns and the server closes the socket."""
        self._mark_gone()
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()

    def _connection_lost(self) -> None:
        if self._lost:
            return
        self._lost = True
        if self._conn is not None:
            self._conn.lost()
