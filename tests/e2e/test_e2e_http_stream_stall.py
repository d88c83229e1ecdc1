"""The stall rule on the gateway's HTTP streams (R-LIM `outbound_stall_secs`, R-ECO-1, R-ECO-2), against a real
daemon: a reader of `GET /api/sessions/{id}/events` or of a streamed `POST /v1/chat/completions` that stops reading
is cut off once it has taken nothing for the stall period while updates wait, counted and logged once, and the turn
goes on for everyone else; it costs the daemon a bounded queue, not the rest of the turn.

Each reader is a raw TCP socket with a small receive buffer: it reads the response's head and then nothing, while a
`/stream 200000` turn writes far more than the kernel's buffers hold.
"""

from __future__ import annotations

import json
import os
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from session_client import Peer
from test_e2e_gateway_sessions import CONFIG, tokens
from waiting import until

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-LIM")]

STALL = 1.0
CUT_OFF = "cutting off HTTP stream http:127.0.0.1:"
CHUNKS = 200_000  # ~30 MB of events: far beyond what the socket buffers hold


@pytest.fixture
def gateway(daemon_factory: DaemonFactory) -> tuple[Daemon, str]:
    config = CONFIG + f"\n[limits]\noutbound_stall_secs = {STALL}\n"
    d = daemon_factory.start(config, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


class StoppedReader:
    """An HTTP request on a raw socket whose reader reads the response up to `until` and then stops reading."""

    def __init__(self, url: str, request: bytes, until: bytes) -> None:
        where = urlsplit(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the daemon's writes block
        self.sock.settimeout(30)
        self.sock.connect((where.hostname, where.port))
        self.sock.sendall(request)
        self.head = b""
        while until not in self.head:
            chunk = self.sock.recv(4096)
            assert chunk, self.head
            self.head += chunk

    def read_rest(self, until: bytes) -> bytes:
        """Read again, up to `until` (what the daemon wrote once the reader came back)."""
        data = b""
        while until not in data:
            chunk = self.sock.recv(1 << 20)
            assert chunk, data[-500:]
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def request(method: str, url: str, path: str, token: str, body: bytes = b"") -> bytes:
    host = urlsplit(url).netloc
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def stalled_peers(url: str, token: str) -> float:
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http:
        text = (await http.get("/metrics", headers={"Authorization": f"Bearer {token}"})).text
    line = next(x for x in text.splitlines() if x.startswith("zeroclaw_stalled_peers_total"))
    return float(line.split()[-1])


async def test_an_event_stream_reader_that_stops_reading_is_cut_off_and_the_turn_goes_on(
    gateway: tuple[Daemon, str],
) -> None:
    d, url = gateway
    t = await tokens(d, "ops", "alice")
    async with await Peer.open(d, token=t["alice"]) as owner:
        sid = (await owner.call("session/new", {}))["sessionId"]
        reader = StoppedReader(url, request("GET", url, f"/api/sessions/{sid}/events", t["alice"]), b": attached")
        try:
            turn = await owner.prompt(sid, f"/stream {CHUNKS}", timeout=120)  # read to its end by the owner
            assert turn.updates[-1]["type"] == "turn_complete"
            assert sum(u["type"] == "agent_message_chunk" for u in turn.updates) >= CHUNKS / 256
            await d.wait_stderr(CUT_OFF, timeout=10)
            assert await stalled_peers(url, t["ops"]) == 1
        finally:
            reader.close()
    assert sum(CUT_OFF in line for line in d.stderr_lines) == 1  # logged once, with no content
    assert not any("lorem" in line for line in d.stderr_lines)


async def test_a_streamed_completion_reader_that_stops_reading_is_cut_off_and_told_when_it_reads_again(
    gateway: tuple[Daemon, str],
) -> None:
    d, url = gateway
    t = await tokens(d, "ops", "alice")
    body = json.dumps(
        {"model": "zeroclaw/default", "stream": True, "messages": [{"role": "user", "content": f"/stream {CHUNKS}"}]}
    ).encode()
    reader = StoppedReader(url, request("POST", url, "/v1/chat/completions", t["alice"], body), b"data: ")
    try:
        head = reader.head.decode("latin-1").lower()
        sid = head.split("x-zeroclaw-session: ", 1)[1].split("\r\n", 1)[0]
        await d.wait_stderr(CUT_OFF, timeout=60)
        assert await stalled_peers(url, t["ops"]) == 1

        async with await Peer.open(d, token=t["alice"]) as alice:  # the turn went on, whole, in its session

            async def counted() -> list[dict[str, object]]:
                turns: list[dict[str, object]] = (await alice.call("session/usage", {"sessionId": sid}))["turns"]
                return turns

            turns = await until(counted, 60)
            assert [turn["outputTokens"] for turn in turns] == [CHUNKS]  # the scripted provider counts each chunk

        rest = reader.read_rest(b'"code":"stalled"')  # back to reading: what was queued, then the cut-off
        assert b"[DONE]" not in rest  # a stream cut short never says it is complete
    finally:
        reader.close()
    assert sum(CUT_OFF in line for line in d.stderr_lines) == 1
