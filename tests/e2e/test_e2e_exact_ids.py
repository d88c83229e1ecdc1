"""Answers carry the request's id exactly, over the socket and the WebSocket (R-WIRE-3).

The story: `{"jsonrpc":"2.0","method":"status","id":100000000000000000000000000076}` was answered with
`"id":1e+29`, and `18446744073709553878` with `1.8446744073709556e+19` (orjson reads integers outside 64 bits as
floats), so the client could not match the answer. These read the answers' raw bytes, never a float-reading
decoder's view of them.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from e2e_harness import READY_RE, Client, Daemon, DaemonFactory
from websockets.asyncio.client import connect

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

EXACT_IDS = [
    "18446744073709551621",
    "18446744073709553878",
    "-100000000000000000000000",
    "100000000000000000000000000076",
    "18446744073709551615",  # the largest id orjson reads as an int: unchanged
    "1.5",
    "-0.0",  # echoed as written; as an id it equals 0 (docs/protocol.md)
    "1.50",
]


def status_line(rid: str) -> bytes:
    return b'{"jsonrpc":"2.0","method":"status","id":' + rid.encode() + b"}\n"


async def answer_to(c: Client, line: bytes) -> bytes:
    await c.send_raw(line)
    return await c.recv_line()


@pytest.mark.req("R-WIRE-3")
async def test_socket_answers_carry_the_exact_id(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        refused = await answer_to(c, status_line("100000000000000000000000000076"))  # before initialize: -32010
        assert refused.startswith(b'{"jsonrpc":"2.0","id":100000000000000000000000000076,"error":{"code":-32010,')
        await c.initialize()
        for rid in EXACT_IDS:
            for _ in range(2):  # the second call of an admitted method is the hot path's to take or leave
                answer = await answer_to(c, status_line(rid))
                assert answer.startswith(b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"result":{'), answer[:80]
        bad = await answer_to(c, b'{"jsonrpc":"2.0","method":"status","params":null,"id":-100000000000000000000000}\n')
        assert bad.startswith(b'{"jsonrpc":"2.0","id":-100000000000000000000000,"error":{"code":-32600,')


@pytest.mark.req("R-WIRE-3")
async def test_a_number_past_the_double_range_is_a_parse_error_and_the_connection_goes_on(
    shared_daemon: Daemon,
) -> None:
    async with await shared_daemon.client() as c:
        answer = await answer_to(c, status_line("1e400"))
        assert json.loads(answer)["error"]["code"] == -32700 and json.loads(answer)["id"] is None
        assert (await answer_to(c, status_line("7"))).startswith(b'{"jsonrpc":"2.0","id":7,"result":')


@pytest.mark.req("R-WIRE-7")
async def test_a_duplicate_big_id_in_flight_is_named_exactly(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        sid = (await c.call("session/new", {}))["sessionId"]
        rid = b"100000000000000000000000000077"
        prompt = {"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": sid, "prompt": "hi"}}
        head = json.dumps(prompt, separators=(",", ":")).encode()[:-1]
        # two prompts under one id in one write: the second arrives while the first is in flight
        await c.send_raw((head + b',"id":' + rid + b"}\n") * 2)
        lines: list[bytes] = []
        while not any(b'"result":' in line for line in lines):
            line = await c.recv_line()
            if not line.startswith(b'{"jsonrpc":"2.0","method":'):  # session/update notifications
                lines.append(line)
        assert len(lines) == 2, lines
        dup, done = lines
        assert dup.startswith(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,')
        assert b'"data":{"kind":"duplicate_id","id":' + rid + b"}" in dup
        assert done.startswith(b'{"jsonrpc":"2.0","id":' + rid + b',"result":')


OPS_TOML = """
[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]
"""


@pytest.mark.req("R-WIRE-3")
@pytest.mark.req("R-GW-4")
async def test_websocket_answers_carry_the_exact_id(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(OPS_TOML, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off"
    async with await d.client() as c:
        token = (await c.call("pairing/create", {"user": "ops"}))["token"]
    ws_url = "ws" + m["gateway"].removeprefix("http") + "/rpc"
    async with connect(ws_url, proxy=None) as conn:

        async def answer(text: str) -> str:
            await conn.send(text)
            reply = await asyncio.wait_for(conn.recv(), 5)
            assert isinstance(reply, str)
            return reply

        before = await answer('{"jsonrpc":"2.0","method":"status","id":18446744073709553878}')
        assert before.startswith('{"jsonrpc":"2.0","id":18446744073709553878,"error":{"code":-32010,')
        init = json.dumps({"protocolVersion": 1, "authToken": token})
        reply = await answer('{"jsonrpc":"2.0","method":"initialize","params":' + init + ',"id":1e2}')
        assert reply.startswith('{"jsonrpc":"2.0","id":1e2,"result":{'), reply[:80]
        for rid in EXACT_IDS:
            reply = await answer(status_line(rid).decode().rstrip("\n"))
            assert reply.startswith('{"jsonrpc":"2.0","id":' + rid + ',"result":{'), reply[:80]
