"""The performance floor: the least work a Python NDJSON JSON-RPC server can do per frame.

asyncio.Protocol on uvloop, orjson, one ``transport.write()`` per ``data_received`` batch and partial lines
joined once. It answers every request-shaped line with a constant result (``initialize`` gets an
initialize-shaped one, everything else a status-shaped one), so whatever the real daemon spends on top of
this is the cost of its own dispatch, validation and bookkeeping.

``bench/stream`` with params ``{"count": N, "text": "..."}`` sends N ``session/update`` notifications and then
the response; it honours ``pause_writing``/``resume_writing`` (and stops reading meanwhile) so a slow reader
never makes the floor buffer without bound.

Usage: ``python benchmarks/floor_server.py /path/to/socket`` -- prints ``ready`` to stderr once listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import sys
from collections import deque
from typing import Any, cast

import orjson

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency on Unix; plain asyncio still works
    uvloop = None  # type: ignore[assignment]

MAX_FRAME = 8 * 1024 * 1024  # SPEC R-WIRE-2, counting the newline
STREAM_BATCH = 256  # notifications per transport.write() while streaming
METHODS = ["initialize", "status", "bench/stream"]

INIT_RESULT = orjson.dumps(
    {
        "protocolVersion": 1,
        "serverVersion": "floor",
        "serverPid": os.getpid(),
        "principal": {"id": "local", "admin": True},
        "methods": METHODS,
    }
)
STATUS_RESULT = orjson.dumps({"version": "floor", "pid": os.getpid(), "uptimeSecs": 0, "connections": 1, "sessions": 0})
RESULT_HEAD = b'{"jsonrpc":"2.0","id":'
RESULT_MID = b',"result":'
RESULT_TAIL = b"}\n"
PARSE_ERROR = (
    orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error", "data": {"kind": "parse_error"}},
        }
    )
    + b"\n"
)
TOO_LARGE = (
    orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Frame too large",
                "data": {"kind": "frame_too_large", "limit": MAX_FRAME},
            },
        }
    )
    + b"\n"
)


class _Stream:
    """One pending ``bench/stream`` request: what is left to send, then its response."""

    __slots__ = ("id_bytes", "remaining", "text")

    def __init__(self, id_bytes: bytes, remaining: int, text: str) -> None:
        self.id_bytes = id_bytes
        self.remaining = remaining
        self.text = text


class FloorProtocol(asyncio.Protocol):
    __slots__ = ("_buffered", "_parts", "_paused", "_streams", "_transport")

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parts: list[bytes] = []  # a partial line, kept as chunks so it is joined only once
        self._buffered = 0
        self._paused = False
        self._streams: deque[_Stream] = deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, so an isinstance check would fail.
        self._transport = transport = cast(asyncio.Transport, transport)
        # A bigger high-water mark means fewer pause/resume round trips while streaming.
        transport.set_write_buffer_limits(high=256 * 1024)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._streams.clear()

    def pause_writing(self) -> None:
        # Stop reading while output is stuck so a client that does not read cannot grow our buffers.
        self._paused = True
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._paused = False
        if self._transport is not None:
            self._transport.resume_reading()
        self._pump()

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        if transport is None:
            return
        if b"\n" not in data:
            self._parts.append(data)
            self._buffered += len(data)
            if self._buffered >= MAX_FRAME:  # its newline would make it one byte too long
                self._too_large(transport)
            return
        if self._parts:
            # Join the pending partial line with just the head of this chunk: one copy of a big frame.
            nl = data.index(b"\n")
            self._parts.append(data[:nl])
            head = b"".join(self._parts)
            self._parts = []
            self._buffered = 0
            lines = data[nl + 1 :].split(b"\n")
            lines[0:0] = [head]
        else:
            lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._parts.append(rest)
            self._buffered = len(rest)
        out: list[bytes] = []
        started_stream = False
        for line in lines:
            if len(line) >= MAX_FRAME:  # the newline makes it one byte over the limit
                self._too_large(transport)
                return
            if not line or line == b"\r":
                continue
            try:
                msg: Any = orjson.loads(line)
            except orjson.JSONDecodeError:
                out.append(PARSE_ERROR)
                continue
            if type(msg) is not dict:
                continue
            method = msg.get("method")
            if type(method) is not str or "id" not in msg:
                continue  # notifications and responses get no answer
            id_bytes = orjson.dumps(msg["id"])
            if method == "bench/stream":
                params = msg.get("params")
                count, text = 0, ""
                if type(params) is dict:
                    raw_count, raw_text = params.get("count", 0), params.get("text", "")
                    count = raw_count if type(raw_count) is int and raw_count > 0 else 0
                    text = raw_text if type(raw_text) is str else ""
                self._streams.append(_Stream(id_bytes, count, text))
                started_stream = True
                continue
            result = INIT_RESULT if method == "initialize" else STATUS_RESULT
            out.append(RESULT_HEAD + id_bytes + RESULT_MID + result + RESULT_TAIL)
        if out:
            transport.write(b"".join(out))
        if started_stream:
            self._pump()

    def _pump(self) -> None:
        """Send queued stream notifications until done or the transport asks us to pause."""
        transport = self._transport
        dumps = orjson.dumps
        while self._streams and transport is not None and not self._paused and not transport.is_closing():
            job = self._streams[0]
            n = min(job.remaining, STREAM_BATCH)
            chunk = [
                dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": "s", "type": "agent_message_chunk", "text": job.text},
                    }
                )
                + b"\n"
                for _ in range(n)
            ]
            job.remaining -= n
            if job.remaining == 0:
                self._streams.popleft()
                chunk.append(RESULT_HEAD + job.id_bytes + RESULT_MID + b'{"sent":true}' + RESULT_TAIL)
            transport.write(b"".join(chunk))  # may call pause_writing() synchronously
            transport = self._transport

    def _too_large(self, transport: asyncio.Transport) -> None:
        self._parts = []
        self._buffered = 0
        transport.write(TOO_LARGE)
        transport.close()


async def serve(path: str) -> None:
    loop = asyncio.get_running_loop()
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    old_umask = os.umask(0o177)  # socket is created 0600, like the daemon's
    try:
        server = await loop.create_unix_server(FloorProtocol, path, backlog=1024)
    finally:
        os.umask(old_umask)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sys.stderr.write("ready\n")
    sys.stderr.flush()
    try:
        await stop.wait()
    finally:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: floor_server.py SOCKET_PATH\n")
        return 2
    if uvloop is not None:
        uvloop.run(serve(argv[1]))
    else:
        asyncio.run(serve(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
