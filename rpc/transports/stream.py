"""The byte-stream read/write loop shared by the Unix socket and the Windows named pipe (R-ARCH-1).

An `asyncio.Protocol`, not a StreamReader/StreamWriter pair: per-connection state stays small, lines are
handed to the connection (`Connection.receive`) as they are split, and what is answered during one read is
coalesced into one `write()` (or one per `_FLUSH_BYTES`); the answer to a read of one frame is written at once.
Flow control both ways:
  * inbound — while the connection is saturated (in-flight cap, `initialize` running, peer not reading),
    reading is paused and already-split lines wait in `_lines`; nothing is dropped;
  * outbound — the transport's high-water mark is `max_outbound_buffer_bytes`; above it producers wait in
    `wait_writable()`, and the shared stall rule (`flow.FlowControl`, paused by `pause_writing`) disconnects a
    peer that makes no progress for `outbound_stall_secs`, whether or not a producer waits.

End of input (R-WIRE-9): `eof_received` keeps our sending side open. Reading stops, the connection fails its own
pending requests to the peer at once, a last line without a newline is taken as a frame, and every frame already
read (also those still held in `_lines`) runs to its answer; once nothing runs and nothing is held, the
connection closes after writing what is queued. `connection_lost` (the real end) is what the dispatcher counts and
audits as a disconnect (`Connection.lost`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import cast

from rpc.transports.base import Acceptor, ConnectionClosed, Peer, Receiver
from rpc.transports.flow import FlowControl
from rpc.transports.framing import FrameTooLarge, LineSplitter

__all__ = ["NdjsonProtocol"]

# One write per read, but no more than this held back: a pipelining client starts on the first
# answers while the rest of its batch is handled (benchmarks/README.md).
_FLUSH_BYTES = 8 * 1024


class NdjsonProtocol(asyncio.Protocol):
    __slots__ = (
        "_closing",
        "_closing_error",
        "_conn",
        "_direct",
        "_dispatcher",
        "_eof",
        "_flow",
        "_flush_scheduled",
        "_frame_limit",
        "_in_batch",
        "_lines",
        "_out",
        "_out_bytes",
        "_partial",
        "_peer_of",
        "_reading_paused",
        "_splitter",
        "_transport",
        "_written",
        "writing_paused",
    )

    def __init__(self, dispatcher: Acceptor, peer_of: Callable[[asyncio.BaseTransport], Peer]) -> None:
        self._dispatcher = dispatcher
        self._peer_of = peer_of
        self._conn: Receiver | None = None
        self._transport: asyncio.WriteTransport | None = None
        self._lines: deque[bytes] = deque()
        self._out: list[bytes] = []
        self._out_bytes = 0  # of what `_out` holds: 0 exactly when it is empty
        self._partial = False  # the splitter holds the start of a line
        self._in_batch = False
        self._direct = False  # `send` writes the next answer straight to the socket
        self._flush_scheduled = False
        self._reading_paused = False
        self.writing_paused = False  # an attribute, not a property: read once per frame
        self._closing = False
        self._eof = False  # nothing more is read: the peer ended its sending side (R-WIRE-9), or sent too much
        self._closing_error: bytes | None = None  # the last frame before the close, once everything is answered
        self._written = 0  # bytes `_flush` handed to the transport: with its buffer size, the stall rule's progress
        self._flow: FlowControl | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.WriteTransport, transport)
        limits = self._dispatcher.limits
        self._frame_limit = limits.max_frame_bytes
        self._splitter = LineSplitter(limits.max_frame_bytes)
        self._transport.set_write_buffer_limits(high=limits.max_outbound_buffer_bytes)
        peer = self._peer_of(transport)
        self._flow = FlowControl(
            limits.outbound_stall_secs, progress=self._delivered, on_stall=self._stalled, label=peer.label
        )
        self._in_batch = True
        self._conn = self._dispatcher.accept(self, peer)
        self._end_batch()

    def data_received(self, data: bytes) -> None:
        conn = self._conn
        if (
            0 <= data.find(b"\n") == len(data) - 1  # one newline, the last byte (and so never an empty read)
            and len(data) <= self._frame_limit
            and not self._partial
            and not self._reading_paused  # frames are held back only while reading is paused
            and conn is not None
            and not self._closing
            and not data.isspace()
        ):
            # The usual read: one whole frame, nothing before it, room to take it (benchmarks/README.md).
            self._in_batch = True
            self._direct = not self._out_bytes  # an answer sent now is written at once (`send`)
            taken = conn.receive(data)
            self._in_batch = self._direct = False
            if not taken:
                self._hold([data])
            elif self._out_bytes:
                self._flush()
            return
        if conn is None or self._closing or self._eof:
            return
        try:
            lines = self._splitter.feed(data)
        except FrameTooLarge as exc:
            self._partial = False
            self._too_large(exc.lines)  # frames complete before the oversize one are still answered
            return
        self._partial = self._splitter.buffered > 0
        self._in_batch = True
        if lines or self._lines:
            self._take(lines)
        self._in_batch = False
        if self._out:
            self._flush()

    def eof_received(self) -> bool | None:
        """The peer ended its sending side: answer everything already read, then close (R-WIRE-9)."""
        conn = self._conn
        if conn is None or self._closing:
            return None  # refused, or closing anyway: close both sides
        if self._eof:
            return True
        self._eof = True
        tail = self._splitter.finish()  # a last line without a newline is still a frame
        self._partial = False
        conn.input_ended()  # fails our pending requests to the peer: it can no longer answer them
        self._in_batch = True
        self._take([tail] if tail is not None else [])
        self._end_batch()
        self._finish_if_done()
        return True  # keep our sending side open until every answer is written

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._direct = False
        if self._flow is not None:
            self._flow.close()  # wake producers so they see the closed connection
        conn, self._conn = self._conn, None  # the connection holds this transport: no cycle left behind
        if conn is not None:
            conn.lost()

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self._flow is not None:
            self._flow.pause()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self._flow is not None:
            self._flow.resume()
        self.resume()

    # -- FrameTransport

    def send(self, frame: bytes) -> None:
        if self._direct:  # the first answer of a one-frame read, with nothing queued before it
            self._direct = False
            self._transport.write(frame + b"\n")  # type: ignore[union-attr]  # set before any read
            return
        if self._closing:
            return
        if len(frame) < 16384:
            self._out.append(frame + b"\n")  # one small copy beats one more element to join
        else:
            self._out += (frame, b"\n")
        # `_queued` inlined: this runs once per answer.
        self._out_bytes += len(frame) + 1
        if self._out_bytes >= _FLUSH_BYTES:
            self._flush()
        elif not self._in_batch and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def send_many(self, frames: list[bytes]) -> None:
        if self._closing or not frames:
            return
        batch = b"\n".join(frames)
        self._out += (batch, b"\n")
        self._queued(len(batch) + 1)

    def _queued(self, size: int) -> None:
        self._out_bytes += size
        if self._out_bytes >= _FLUSH_BYTES:
            # Also how a producer that never yields (a fast stream) reaches the transport, whose high-water
            # mark is what makes it wait (pause_writing); the coalescing buffer itself stays small.
            self._flush()
        elif not self._in_batch and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        if self._closing or self._transport is None:
            return
        self._flush()
        self._closing = True
        self._direct = False
        self._transport.close()

    def resume(self) -> None:
        conn = self._conn
        if conn is None or self._closing:
            return
        if not conn.saturated:
            self._in_batch = True
            self._take([])
            self._end_batch()
            if self._reading_paused and not conn.saturated and self._transport is not None:
                self._reading_paused = False
                if not self._eof:  # after EOF the transport reads no more (resuming would report EOF again)
                    cast(asyncio.ReadTransport, self._transport).resume_reading()
        if self._eof:
            self._finish_if_done()

    async def wait_writable(self) -> None:
        # No timer: the stall rule (`FlowControl`) aborts a peer that stopped reading, and
        # `connection_lost` wakes this wait.
        while self.writing_paused and not self._closing and self._flow is not None:
            await self._flow.wait()
        if self._closing:
            raise ConnectionClosed

    # -- internals

    def _take(self, lines: list[bytes]) -> None:
        """Hand frames to the connection in order; what it cannot take yet waits, and so does the socket."""
        conn = self._conn
        assert conn is not None
        if self._lines:  # earlier frames still wait: they go first
            lines = [*self._lines, *lines]
            self._lines.clear()
        receive = conn.receive
        for index, line in enumerate(lines):
            if not receive(line):
                self._hold(lines[index:])
                return

    def _hold(self, lines: list[bytes]) -> None:
        """Keep frames the connection cannot take yet, and stop reading until it can."""
        if self._closing:
            return
        self._lines.extend(lines)
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            if not self._eof:
                cast(asyncio.ReadTransport, self._transport).pause_reading()

    def _finish_if_done(self) -> None:
        """After EOF: once every frame read has been answered, write what is queued and close (R-WIRE-9)."""
        conn = self._conn
        if conn is not None and not self._closing and not self._lines and conn.idle:
            if self._closing_error is not None:
                self.send(self._closing_error)
            self.close()

    def queued_bytes(self) -> int:
        """What `_out` holds plus the asyncio transport's write buffer."""
        transport = self._transport
        return self._out_bytes + (transport.get_write_buffer_size() if transport is not None else 0)

    def _stalled(self) -> None:
        if self._conn is not None:
            self._conn.stalled()
        self._abort()

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()  # what is queued cannot be delivered: drop it, connection_lost follows

    def _delivered(self) -> int:
        """Bytes that left the daemon towards the peer (the stall rule's progress). Only `_flush` writes while
        writing is paused (a direct write in `data_received` needs a connection that is not saturated), so
        between two readings of a paused `FlowControl` this moves only when the peer reads."""
        transport = self._transport
        return self._written - (transport.get_write_buffer_size() if transport is not None else 0)

    def _too_large(self, complete: list[bytes]) -> None:
        """An oversize frame ends the connection (R-WIRE-2) as EOF would: nothing more is read, every frame before
        it (also those still held) is answered, then `frame_too_large`, then the close. Closing at once cancelled
        the calls still running (regression, found by the fuzz kit: benchmarks/fuzz.py)."""
        conn = self._conn
        assert conn is not None
        self._closing_error = self._dispatcher.refusal("frame_too_large", self._frame_limit)
        self._eof = True
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            cast(asyncio.ReadTransport, self._transport).pause_reading()
        conn.input_ended()  # it can answer nothing more: what we asked it fails now
        self._in_batch = True
        self._take(complete)
        self._end_batch()
        self._finish_if_done()

    def _end_batch(self) -> None:
        self._in_batch = False
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._out and self._transport is not None and not self._transport.is_closing():
            data = b"".join(self._out)
            self._out.clear()
            self._out_bytes = 0
            self._written += len(data)
            self._transport.write(data)
