"""`WebSocketTransport` flow control over a fake socket (R-GW-4, R-LIM, R-WIRE-2)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from gateway_env import EnvFactory
from waiting import until

from rpc.core.connection import Connection
from rpc.core.context import CallContext
from rpc.core.envelope import encode_notifications
from rpc.core.registry import Params
from rpc.transports.base import ConnectionClosed
from rpc.transports.websocket import WebSocketTransport, bearer_token, websocket_peer

pytestmark = pytest.mark.req("R-GW-4")


class FakeSocket:
    """Satisfies `WebSocketLike`. While `blocked`, each send needs a credit (a peer that reads slowly or not)."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.closed_with: int | None = None
        self.receives = 0
        self.received_at: list[float] = []  # the loop time of each `receive()` call
        self.blocked = False
        self._credits = asyncio.Semaphore(0)

    def grant(self, n: int = 1) -> None:
        for _ in range(n):
            self._credits.release()

    def unblock(self) -> None:
        self.blocked = False
        self.grant(1000)

    async def receive(self) -> Mapping[str, Any]:
        self.receives += 1
        self.received_at.append(asyncio.get_running_loop().time())
        return await self.inbox.get()

    async def send_text(self, data: str) -> None:
        if self.blocked:
            await self._credits.acquire()
        self.sent.append(orjson.loads(data))

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed_with = code

    def feed(self, frame: Any) -> None:
        text = frame if isinstance(frame, str) else orjson.dumps(frame).decode()
        self.inbox.put_nowait({"type": "websocket.receive", "text": text})

    def disconnect(self) -> None:
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})


class SleepParams(Params):
    secs: float


def test_peer_label_and_bearer() -> None:
    peer = websocket_peer(("10.1.2.3", 5555), "Bearer zc_abc")
    assert (peer.label, peer.remote, peer.bearer_token) == ("ws:10.1.2.3:5555", True, "zc_abc")
    assert websocket_peer(("::1", 7), None).label == "ws:[::1]:7"
    assert websocket_peer(None, None).label == "ws:unknown"
    assert bearer_token("bearer  tok ") == "tok"
    assert bearer_token("Basic tok") is None
    assert bearer_token("Bearer a b") is None
    assert bearer_token("Bearer " + "x" * 513) is None
    assert "zc_abc" not in repr(peer)


async def test_saturated_connection_stops_receiving_until_a_slot_frees(make_env: EnvFactory) -> None:
    env = await make_env(max_inflight_per_connection=1)
    finished: list[float] = []

    async def sleep(call: CallContext, params: SleepParams) -> str:
        await asyncio.sleep(params.secs)
        finished.append(asyncio.get_running_loop().time())
        return "slept"

    env.registry.method("test/sleep", params=SleepParams, grant="system:read")(sleep)
    _, token = await env.token()
    sock = FakeSocket()
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 1), f"Bearer {token}"))
    runner = asyncio.create_task(transport.run())
    sock.feed({"jsonrpc": "2.0", "method": "initialize", "params": {}, "id": 0})
    await until(lambda: len(sock.sent) == 1)
    sock.feed({"jsonrpc": "2.0", "method": "test/sleep", "params": {"secs": 0.2}, "id": 1})
    sock.feed({"jsonrpc": "2.0", "method": "status", "id": 2})
    await until(lambda: sock.receives >= 3)
    assert finished and sock.received_at[2] >= finished[0]  # the slot was taken: no read until the call ended
    await until(lambda: len(sock.sent) == 3)
    assert [m["id"] for m in sock.sent[1:]] == [1, 2]
    sock.disconnect()
    await asyncio.wait_for(runner, 2)
    assert not env.server.connections


async def test_a_message_read_as_the_connection_saturates_is_held_then_answered(make_env: EnvFactory) -> None:
    """The reader checks saturation, then awaits the next message; if the connection saturated meanwhile (here the
    peer stopped reading), `Connection.receive` declines the message: it is held, not lost, and answered once
    the peer reads again (R-WIRE-3: every request gets its answer)."""
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=5)
    _, token = await env.token()
    sock = FakeSocket()
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 9), f"Bearer {token}"))
    runner = asyncio.create_task(transport.run())
    sock.feed({"jsonrpc": "2.0", "method": "initialize", "params": {}, "id": 0})
    await until(lambda: len(sock.sent) == 1)
    (conn,) = env.server.connections
    await until(lambda: sock.receives == 2)  # the reader waits for the next message, the connection not saturated
    sock.blocked = True  # the peer stops reading, and the queue goes over the limit
    big = {"pad": "x" * 40000}
    conn.send(orjson.dumps({"jsonrpc": "2.0", "method": "test/n", "params": big}))
    conn.send(orjson.dumps({"jsonrpc": "2.0", "method": "test/n", "params": big}))
    assert conn.saturated
    sock.feed({"jsonrpc": "2.0", "method": "status", "id": 1})
    await until(lambda: transport._held is not None)  # read, declined by the saturated connection, kept
    assert sock.receives == 2 and not any(m.get("id") == 1 for m in sock.sent)
    sock.unblock()
    await until(lambda: any(m.get("id") == 1 and "result" in m for m in sock.sent))
    sock.disconnect()
    await asyncio.wait_for(runner, 2)


async def test_outbound_buffer_pauses_writers_and_a_stalled_peer_is_dropped(make_env: EnvFactory) -> None:
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.2)
    sock = FakeSocket()
    sock.blocked = True  # the peer reads nothing
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 2), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    (conn,) = env.server.connections
    big = {"pad": "x" * 40000}
    await conn.send_encoded(encode_notifications("test/n", [big]))
    await conn.send_encoded(encode_notifications("test/n", [big]))  # queued: now over the high-water mark
    assert transport.writing_paused and conn.saturated
    with pytest.raises(ConnectionClosed):  # waits outbound_stall_secs without progress, then drops the peer
        await conn.send_encoded(encode_notifications("test/n", [big]))
    await asyncio.wait_for(runner, 2)
    assert conn.closed and not env.server.connections
    assert sock.closed_with is None  # dropped, not a polite close through a full buffer


async def test_a_slow_but_moving_peer_is_kept(make_env: EnvFactory) -> None:
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.3)
    sock = FakeSocket()
    sock.blocked = True
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 3), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    (conn,) = env.server.connections
    for _ in range(4):
        transport.send(b'{"pad":"' + b"x" * 30000 + b'"}')  # 120 kB queued, high water 64 KiB

    async def trickle() -> None:
        for _ in range(2):
            await asyncio.sleep(0.2)
            sock.grant()

    trickler = asyncio.create_task(trickle())
    # One frame leaves at 0.2 s (still paused), the stall check at 0.3 s sees progress and waits on; the second
    # frame at 0.4 s brings the queue under the mark.
    await conn.send_encoded(encode_notifications("test/n", [{"pad": "y"}]))
    await trickler
    sock.unblock()
    await until(lambda: len(sock.sent) == 5)
    assert not transport.writing_paused and not conn.closed
    sock.disconnect()
    await asyncio.wait_for(runner, 2)


async def test_close_flushes_then_closes_and_connection_lost_runs_once(
    make_env: EnvFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost: list[Connection] = []
    original = Connection.lost

    def counting(self: Connection) -> None:
        lost.append(self)
        original(self)

    monkeypatch.setattr(Connection, "lost", counting)
    env = await make_env()
    sock = FakeSocket()
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 4), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    (conn,) = env.server.connections
    transport.send(b'{"jsonrpc":"2.0","method":"a"}')
    transport.send(b'{"jsonrpc":"2.0","method":"b"}')
    transport.close(4000)
    transport.send(b'{"jsonrpc":"2.0","method":"late"}')  # after close: dropped
    await asyncio.wait_for(runner, 2)
    assert [m["method"] for m in sock.sent] == ["a", "b"]
    assert sock.closed_with == 4000
    assert lost == [conn]
    with pytest.raises(ConnectionClosed):
        await transport.wait_writable()
    with pytest.raises(ConnectionClosed):
        await conn.send_encoded(encode_notifications("test/n", [{}]))


async def test_peer_leaving_with_frames_queued_ends_everything(make_env: EnvFactory) -> None:
    env = await make_env()
    sock = FakeSocket()
    sock.blocked = True
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 5), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    transport.send(b"{}")
    sock.disconnect()
    await asyncio.wait_for(runner, 2)
    assert not env.server.connections and sock.sent == []


async def test_oversize_text_by_characters_is_refused_before_encoding(make_env: EnvFactory) -> None:
    env = await make_env(max_frame_bytes=1024)
    sock = FakeSocket()
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 6), None))
    runner = asyncio.create_task(transport.run())
    sock.feed("x" * 5000)
    await asyncio.wait_for(runner, 2)
    assert sock.sent[0]["error"]["data"] == {"kind": "frame_too_large", "limit": 1024}
    assert sock.closed_with == 1009


@pytest.mark.req("R-WIRE-5")
async def test_regression_calls_before_an_oversize_message_are_answered_before_the_1009_close(
    make_env: EnvFactory,
) -> None:
    """Found by the fuzz kit: the 1009 close cancelled the calls still running (no answer at all)."""
    env = await make_env(max_frame_bytes=1024)

    async def sleep(ctx: CallContext, params: SleepParams) -> str:
        await asyncio.sleep(params.secs)
        return "slept"

    env.registry.method("test/sleep2", params=SleepParams, grant="system:read")(sleep)
    _, token = await env.token("boss")
    sock = FakeSocket()
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 7), f"Bearer {token}"))
    runner = asyncio.create_task(transport.run())
    sock.feed('{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}')
    sock.feed('{"jsonrpc":"2.0","method":"test/sleep2","params":{"secs":0.05},"id":2}')
    sock.feed("x" * 5000)
    await asyncio.wait_for(runner, 2)
    assert [m.get("id") for m in sock.sent] == [1, 2, None]
    assert sock.sent[1]["result"] == "slept"
    assert sock.sent[2]["error"]["data"] == {"kind": "frame_too_large", "limit": 1024}
    assert sock.closed_with == 1009
