"""End of input (R-WIRE-9) and the outbound stall rule (R-LIM) on the NDJSON byte stream, over a fake transport,
and the shared `FlowControl` itself."""

from __future__ import annotations

import asyncio
import logging

import pytest
from test_connection import make_server
from test_ndjson_protocol import FakeSocket, frame
from waiting import until

from app.config.schema import Limits
from rpc.core.connection import Connection
from rpc.transports.base import ConnectionClosed, Peer
from rpc.transports.flow import POLLS, FlowControl
from rpc.transports.framing import LineSplitter
from rpc.transports.stream import NdjsonProtocol


class FlowSocket(FakeSocket):
    """Also reports a write-buffer size and records an abort."""

    def __init__(self) -> None:
        super().__init__()
        self.buffered = 0
        self.aborted = False
        self.eof_reads = 0
        self.looks = 0  # how often the write buffer's size was read
        self.read_every = 0  # a slow reader: it reads 1000 bytes before every n-th look (0: it does not read)

    def get_write_buffer_size(self) -> int:
        self.looks += 1
        if self.read_every and self.looks % self.read_every == 0:
            self.buffered -= 1000
        return self.buffered

    def abort(self) -> None:
        self.aborted = True
        self.closed = True

    def resume_reading(self) -> None:
        super().resume_reading()
        self.eof_reads += 1  # a real transport would report EOF again


def connect(limits: Limits | None = None) -> tuple[NdjsonProtocol, FlowSocket, Connection]:
    server, _ = make_server(limits)
    protocol = NdjsonProtocol(server, lambda transport: Peer("unix:pid=1,uid=0", uid=0))
    sock = FlowSocket()
    protocol.connection_made(sock)  # type: ignore[arg-type]  # a fake of the transport's used surface
    (conn,) = server.connections
    return protocol, sock, conn


# ---------------------------------------------------------------------------------------------- EOF


@pytest.mark.req("R-WIRE-9")
async def test_eof_keeps_writing_until_every_frame_read_is_answered() -> None:
    protocol, sock, conn = connect()
    # `initialize` is a barrier: `status` and the sleep wait in the protocol when the end of input arrives.
    protocol.data_received(
        frame("initialize", "init", {"protocolVersion": 1})
        + frame("test/sleep", "slow", {"secs": 0.1})
        + frame("status", "st")
    )
    assert protocol.eof_received() is True  # our sending side stays open
    assert not sock.closed and conn.input_closed and not conn.closed
    await until(lambda: sock.closed)
    assert [m["id"] for m in sock.messages()] == ["init", "st", "slow"]
    assert sock.eof_reads == 0, "reading was resumed after EOF"
    daemon = conn.context.daemon_view
    protocol.connection_lost(None)
    assert conn.closed and daemon.connection_count == 0  # counted and audited when it really ends


@pytest.mark.req("R-WIRE-9")
async def test_a_last_line_without_a_newline_is_a_frame() -> None:
    protocol, sock, _ = connect()
    protocol.data_received(frame("initialize", 1, {"protocolVersion": 1}) + frame("status", 2)[:-1])
    protocol.eof_received()
    await until(lambda: sock.closed)
    assert [m["id"] for m in sock.messages()] == [1, 2]


@pytest.mark.req("R-WIRE-9")
async def test_eof_with_nothing_running_closes_at_once() -> None:
    protocol, sock, _ = connect()
    protocol.data_received(b"   ")
    protocol.eof_received()
    assert sock.closed and sock.messages() == []


@pytest.mark.req("R-WIRE-9")
async def test_eof_fails_requests_to_the_peer_at_once_and_refuses_new_ones() -> None:
    protocol, sock, conn = connect()
    protocol.data_received(frame("initialize", 1, {"protocolVersion": 1}) + frame("test/sleep", 2, {"secs": 0.2}))
    asked = asyncio.create_task(conn.request("elicitation/create", {}, timeout=30))
    await until(lambda: any(m.get("method") == "elicitation/create" for m in sock.messages()))
    gone: list[str] = []
    conn.when_gone(lambda: gone.append("now"))
    protocol.eof_received()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(asked, 1)
    assert gone == ["now"]
    with pytest.raises(ConnectionClosed):
        await conn.request("elicitation/create", {}, timeout=30)
    late: list[str] = []
    conn.when_gone(lambda: late.append("at once"))
    assert late == ["at once"]
    await until(lambda: sock.closed)  # the running request was still answered
    assert 2 in [m.get("id") for m in sock.messages()]


def test_splitter_finish_gives_the_partial_line() -> None:
    splitter = LineSplitter(64)
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert splitter.feed(b":2}\r") == []
    assert splitter.finish() == b'{"b":2}'
    assert splitter.finish() is None and splitter.buffered == 0
    splitter.feed(b" \t ")
    assert splitter.finish() is None


# -------------------------------------------------------------------------------------------- stall rule


@pytest.mark.req("R-LIM")
async def test_a_stream_peer_that_makes_no_progress_is_aborted_without_a_waiting_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    protocol, sock, conn = connect(Limits(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.1))
    protocol.data_received(frame("initialize", 1, {"protocolVersion": 1}))
    await until(lambda: bool(sock.messages()))
    secret = b'{"jsonrpc":"2.0","method":"x","params":"top-secret-content"}'
    protocol.send(secret * 2000)  # a large answer; nobody waits for room
    sock.buffered = 100_000
    with caplog.at_level(logging.WARNING, logger="zeroclaw.rpc"):
        protocol.pause_writing()
        await until(lambda: sock.aborted, timeout=1)
    (record,) = [r for r in caplog.records if "no progress" in r.getMessage()]
    assert "unix:pid=1,uid=0" in record.getMessage() and "top-secret" not in record.getMessage()
    protocol.connection_lost(None)
    assert conn.closed


@pytest.mark.req("R-LIM")
async def test_a_slow_stream_peer_is_kept_and_draining_disarms() -> None:
    protocol, sock, conn = connect(Limits(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.1))
    sock.buffered = 100_000
    sock.read_every = 2  # it reads a little between every other look of the rule: never a period without progress
    protocol.pause_writing()
    looks = sock.looks
    await until(lambda: sock.aborted or sock.looks >= looks + 2 * POLLS)  # two periods of the rule's looks
    assert not sock.aborted
    protocol.resume_writing()
    flow = protocol._flow
    assert flow is not None and not flow.watching  # disarmed: no stall can follow
    assert not sock.aborted and not conn.closed


@pytest.mark.req("R-LIM")
async def test_a_producer_waits_and_is_released_by_the_drop() -> None:
    protocol, sock, _ = connect(Limits(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.1))
    protocol.pause_writing()
    waiter = asyncio.create_task(protocol.wait_writable())
    await until(lambda: sock.aborted)
    protocol.connection_lost(None)  # what the transport does after abort()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(waiter, 1)


@pytest.mark.req("R-LIM")
async def test_an_answer_waits_while_the_peer_is_not_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """An async handler's answer is not queued above the limit: it waits for room like streamed output."""
    waits: list[NdjsonProtocol] = []
    wait_writable = NdjsonProtocol.wait_writable

    async def recorded(self: NdjsonProtocol) -> None:
        waits.append(self)
        await wait_writable(self)

    monkeypatch.setattr(NdjsonProtocol, "wait_writable", recorded)
    protocol, sock, conn = connect(Limits(max_outbound_buffer_bytes=65536, outbound_stall_secs=5))
    protocol.data_received(frame("initialize", 1, {"protocolVersion": 1}))
    await until(lambda: bool(sock.messages()))
    protocol.data_received(frame("test/sleep", 2, {"secs": 0.01}))
    protocol.pause_writing()
    await until(lambda: waits == [protocol])  # the handler has finished: its answer waits for room
    assert [m["id"] for m in sock.messages()] == [1]  # finished, not yet queued
    protocol.resume_writing()
    await until(lambda: len(sock.messages()) == 2)
    assert sock.messages()[1] == {"jsonrpc": "2.0", "id": 2, "result": "slept"}
    assert conn.idle


class Reader:
    """The peer's side of a `FlowControl`: how often the rule looked (`polls`), and the bytes the peer has read by
    then; it reads a little just before each look numbered in `reads_at` (so where the rule sees progress does not
    depend on how loaded the machine is), and `last_read` is the loop time of its last read."""

    def __init__(self, reads_at: tuple[int, ...] = ()) -> None:
        self.reads_at = reads_at
        self.read = 0
        self.polls = 0
        self.last_read: float | None = None

    def progress(self) -> int:
        self.polls += 1
        if self.polls in self.reads_at:
            self.read += 1
            self.last_read = asyncio.get_running_loop().time()
        return self.read


@pytest.mark.req("R-LIM")
async def test_flow_control_pauses_watches_and_calls_on_stall_once() -> None:
    peer = Reader(reads_at=(3,))  # the mark at the pause, one look without progress, then some
    loop = asyncio.get_running_loop()
    stalls: list[tuple[float, bool]] = []  # (when, whether the waiting producer had been released by then)
    flow = FlowControl(
        0.05, progress=peer.progress, on_stall=lambda: stalls.append((loop.time(), waiter.done())), label="x"
    )
    flow.pause()
    flow.pause()  # one timer, however often the mark is crossed
    assert flow.paused and flow.watching and peer.polls == 1  # the mark taken at the pause
    waiter = asyncio.create_task(flow.wait())
    await until(lambda: stalls, timeout=1)
    ((stalled_at, released),) = stalls
    assert peer.last_read is not None and peer.polls > 3
    assert stalled_at - peer.last_read >= 0.05, "cut off less than a period after its last progress"
    assert not released and not flow.watching and not waiter.done()
    flow.close()  # what the transport does once on_stall has dropped the connection
    await asyncio.wait_for(waiter, 1)
    assert len(stalls) == 1
    flow = FlowControl(0.05, progress=peer.progress, on_stall=lambda: stalls.append((loop.time(), False)), label="y")
    flow.pause()
    flow.resume()
    assert not flow.paused and not flow.watching  # the timer is cancelled: no stall can follow
    await asyncio.wait_for(flow.wait(), 1)


@pytest.mark.req("R-LIM")
async def test_regression_a_peer_that_stops_reading_is_cut_off_one_period_after_its_last_progress() -> None:
    """Found by benchmarks/soak.py: progress seen anywhere in a watched period bought a whole new period, so a peer
    that read a little right after the pause was cut off up to twice `outbound_stall_secs` after it stopped."""
    peer = Reader(reads_at=(2,))  # the last bytes the peer reads: just before the rule's first look
    stalls: list[float] = []
    loop = asyncio.get_running_loop()
    flow = FlowControl(0.2, progress=peer.progress, on_stall=lambda: stalls.append(loop.time()), label="x")
    flow.pause()
    await until(lambda: stalls, timeout=2)
    assert len(stalls) == 1 and peer.last_read is not None
    assert 0.2 <= stalls[0] - peer.last_read <= 0.2 + 0.2 / POLLS + 0.05, "not one period after its last progress"
    flow.close()


@pytest.mark.req("R-WIRE-5")
async def test_regression_calls_before_an_oversize_frame_are_answered_before_the_close() -> None:
    """Found by the fuzz kit (benchmarks/fuzz.py): the close at an oversize frame cancelled the calls still running,
    so `session/list` requests sent just before it got no answer at all. Now an oversize frame ends the input as
    EOF does: every earlier request is answered, then `frame_too_large`, then the close."""
    protocol, sock, _ = connect(Limits(max_frame_bytes=1024))
    protocol.data_received(
        frame("initialize", "init", {"protocolVersion": 1})
        + frame("test/sleep", "slow", {"secs": 0.05})
        + frame("status", "st")
        + b"x" * 2000
        + b"\n"
        + frame("status", "after")  # past the oversize frame: never read
    )
    await until(lambda: sock.closed)
    messages = sock.messages()
    assert [m.get("id") for m in messages] == ["init", "st", "slow", None]
    assert messages[-1]["error"]["data"] == {"kind": "frame_too_large", "limit": 1024}
