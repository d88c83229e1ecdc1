"""The stall rule on a WebSocket peer (R-LIM): dropped whether or not a producer waits."""

from __future__ import annotations

import asyncio
import logging

import pytest
from gateway_env import EnvFactory
from test_gateway_ws_transport import FakeSocket
from waiting import until

from rpc.transports.websocket import WebSocketTransport, websocket_peer

pytestmark = pytest.mark.req("R-LIM")


async def test_answers_queued_above_the_limit_drop_a_peer_that_never_reads(
    make_env: EnvFactory, caplog: pytest.LogCaptureFixture
) -> None:
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.2)
    sock = FakeSocket()
    sock.blocked = True  # reads nothing
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 6), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    (conn,) = env.server.connections
    with caplog.at_level(logging.WARNING, logger="zeroclaw.rpc"):
        for _ in range(3):  # large answers queued at once: nobody waits for room
            transport.send(b'{"jsonrpc":"2.0","id":1,"result":"' + b"s" * 40000 + b'"}')
        await asyncio.wait_for(runner, 2)
    assert conn.closed and not env.server.connections
    (record,) = [r for r in caplog.records if "no progress" in r.getMessage()]
    assert "ws:127.0.0.1:6" in record.getMessage() and "sss" not in record.getMessage()


async def test_a_queue_that_drains_below_the_limit_disarms_the_rule(make_env: EnvFactory) -> None:
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.2)
    sock = FakeSocket()
    sock.blocked = True
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 7), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    (conn,) = env.server.connections
    for _ in range(3):
        transport.send(b'{"pad":"' + b"x" * 30000 + b'"}')
    assert transport.writing_paused
    sock.grant(2)  # the peer reads two frames: back under the limit
    await until(lambda: not transport.writing_paused)
    await asyncio.sleep(0.4)  # two stall periods with the third frame still queued: below the mark, no rule
    assert not conn.closed
    sock.unblock()
    await until(lambda: len(sock.sent) == 3)
    sock.disconnect()
    await asyncio.wait_for(runner, 2)
