"""The NDJSON byte-stream protocol (Unix socket, named pipe) over a fake asyncio transport.

Most reads carry exactly one whole frame, and those skip the line splitter and the coalescing buffer; these
tests pin that the short way answers exactly like the general one (blank lines, partial lines, frames held
while the connection is saturated, the frame limit, order behind output already queued).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from test_connection import make_server
from waiting import until

from app.config.schema import Limits
from rpc.transports.base import Peer
from rpc.transports.stream import NdjsonProtocol


class FakeSocket:
    """The asyncio transport side: records writes and reading pauses."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.reading = True
        self.closed = False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def messages(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for data in self.writes for line in data.splitlines() if line.strip()]


def frame(method: str, rid: Any, params: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        body["params"] = params
    return orjson.dumps(body) + b"\n"


def connect(limits: Limits | None = None) -> tuple[NdjsonProtocol, FakeSocket]:
    server, _ = make_server(limits)
    protocol = NdjsonProtocol(server, lambda transport: Peer("test", uid=0))
    sock = FakeSocket()
    protocol.connection_made(sock)  # type: ignore[arg-type]  # a fake of the transport's used surface
    return protocol, sock


async def initialized(limits: Limits | None = None) -> tuple[NdjsonProtocol, FakeSocket]:
    protocol, sock = connect(limits)
    protocol.data_received(frame("initialize", "init", {"protocolVersion": 1}))
    await until(lambda: sock.writes, 0.5)
    assert "result" in sock.messages()[0]
    sock.writes.clear()
    return protocol, sock


@pytest.mark.req("R-WIRE-1")
async def test_each_one_frame_read_is_answered_with_one_write() -> None:
    protocol, sock = await initialized()
    for rid in (1, "two", 3.5, None):
        protocol.data_received(frame("status", rid))
    assert len(sock.writes) == 4 and all(data.count(b"\n") == 1 for data in sock.writes)
    assert [m["id"] for m in sock.messages()] == [1, "two", 3.5, None]


@pytest.mark.req("R-WIRE-1")
async def test_blank_one_line_reads_are_no_frames() -> None:
    protocol, sock = await initialized()
    for blank in (b"", b"\n", b"\r\n", b" \t \n"):
        protocol.data_received(blank)
    assert sock.writes == []
    protocol.data_received(frame("status", 1)[:-1] + b"\r\n")  # CRLF is fine on the short way too
    assert [m["id"] for m in sock.messages()] == [1]


@pytest.mark.req("R-WIRE-1")
async def test_a_read_that_ends_a_partial_frame_is_answered_once() -> None:
    protocol, sock = await initialized()
    whole = frame("status", 5)
    protocol.data_received(whole[:20])
    assert sock.writes == []
    protocol.data_received(whole[20:])  # one newline, at the end: only the splitter knows it is a tail
    protocol.data_received(frame("status", 6))
    assert [m["id"] for m in sock.messages()] == [5, 6]


@pytest.mark.req("R-WIRE-3")
async def test_one_malformed_frame_per_read_gets_the_general_answers() -> None:
    protocol, sock = await initialized()
    protocol.data_received(frame("status", 1))  # admitted: the next ones are checked on the short way
    sock.writes.clear()
    protocol.data_received(b"{\n")
    protocol.data_received(b'{"jsonrpc":"2.0","method":"status","id":2,"result":1}\n')
    protocol.data_received(b'{"jsonrpc":"1.0","method":"status","id":3}\n')
    protocol.data_received(b'{"jsonrpc":"2.0","method":"status","id":4,"params":true}\n')
    protocol.data_received(b'{"jsonrpc":"2.0","method":"status","id":[5]}\n')
    protocol.data_received(b'{"jsonrpc":"2.0","method":"status"}\n')  # a notification: no answer
    protocol.data_received(b'{"jsonrpc":"2.0","method":"status","id":7,"extra":1}\n')  # unknown keys ignored
    codes = [(m["id"], m.get("error", {}).get("code")) for m in sock.messages()]
    assert codes == [(None, -32700), (None, -32600), (3, -32600), (4, -32600), (None, -32600), (7, None)]


@pytest.mark.req("R-WIRE-6")
async def test_a_frame_read_while_initialize_runs_waits_and_keeps_its_order() -> None:
    protocol, sock = connect()
    protocol.data_received(frame("initialize", "init", {"protocolVersion": 1}))
    protocol.data_received(frame("status", "after"))  # `initialize` is a barrier: this one must wait
    assert not sock.reading
    await until(lambda: len(sock.messages()) == 2, 0.5)
    assert [m["id"] for m in sock.messages()] == ["init", "after"] and sock.reading


@pytest.mark.req("R-WIRE-7")
async def test_an_answer_never_overtakes_output_already_queued() -> None:
    protocol, sock = await initialized()
    protocol.data_received(frame("status", 0))  # admitted: the next answer comes back for a direct write
    sock.writes.clear()
    protocol.send(orjson.dumps({"jsonrpc": "2.0", "method": "early/notice"}))  # queued, flush scheduled
    protocol.data_received(frame("status", 1))
    await until(lambda: len(sock.messages()) == 2, interval=0)
    assert [m.get("method", m.get("id")) for m in sock.messages()] == ["early/notice", 1]


@pytest.mark.req("R-WIRE-2")
async def test_a_frame_of_exactly_the_limit_is_answered_and_one_byte_more_is_refused() -> None:
    limits = Limits(max_frame_bytes=1024)
    protocol, sock = await initialized(limits)
    head = frame("status", 1)
    exact = head[:-2] + b" " * (1024 - len(head)) + b"}\n"  # whitespace inside the JSON object
    assert len(exact) == 1024
    protocol.data_received(exact)
    assert sock.messages() == [{**sock.messages()[0], "id": 1}] and "result" in sock.messages()[0]
    sock.writes.clear()
    protocol.data_received(exact[:-2] + b" }\n")
    (error,) = sock.messages()
    assert error["error"]["data"] == {"kind": "frame_too_large", "limit": 1024} and sock.closed
