"""A peer that stops reading is cut off, on every transport (R-LIM `max_outbound_buffer_bytes`,
`outbound_stall_secs`), against a real daemon.

Each client asks for far more output than the configured limit (a ~1 MB prompt is answered by ~3 MB: the echoed
text in a few large chunks, `turn_complete` and the prompt's answer; or a few `session/messages` answers of
~2 MB queued at once) and then never reads. The daemon must close it within a few seconds of the stall period,
log it, and go on serving everyone else.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from typing import Any

import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory, RawClient
from waiting import until_sync
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-LIM")]

LIMIT = 65536
STALL = 1.0
CLOSED_WITHIN = STALL + 6.0  # generous: two cores shared with other test runs

CONFIG = f"""
[limits]
max_outbound_buffer_bytes = {LIMIT}
outbound_stall_secs = {STALL}

[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]
"""

BIG_PROMPT = "abcdefghi " * 99_000  # 990,000 characters, under the 1,000,000 prompt limit
STALL_LOG = "its queued output stayed above max_outbound_buffer_bytes"


@pytest.fixture
def stall_daemon(daemon_factory: DaemonFactory) -> tuple[Daemon, str]:
    d = daemon_factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, "ws" + m["gateway"].removeprefix("http") + "/rpc"


def frame(method: str, rid: Any, params: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        body["params"] = params
    return body


def line(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def call(c: RawClient, method: str, rid: Any, params: Any = None) -> dict[str, Any]:
    c.sock.sendall(line(frame(method, rid, params)))
    while "method" in (answer := c.recv_frame(10)):
        pass
    assert answer["id"] == rid and "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def connections(d: Daemon) -> int:
    with RawClient(d.socket_path) as c:
        c.initialize()
        return int(call(c, "status", "count")["connections"]) - 1  # not this one


def wait_closed(d: Daemon, started: float, remaining: int = 0) -> float:
    """Seconds from `started` until the daemon counts `remaining` other connections."""
    until_sync(
        lambda: connections(d) <= remaining,
        started + CLOSED_WITHIN - time.monotonic(),
        interval=0.1,
        what=f"the stalled peer to be gone within {CLOSED_WITHIN} s",
    )
    return time.monotonic() - started


def assert_serves_others(d: Daemon) -> None:
    with RawClient(d.socket_path) as c:
        c.initialize()
        sid = call(c, "session/new", 2, {})["sessionId"]
        result = call(c, "session/prompt", 3, {"sessionId": sid, "prompt": "still here"})
        assert result["content"] == "You said: «still here»"


def assert_logged_once(d: Daemon, label_prefix: str) -> None:
    d.wait_stderr_sync(STALL_LOG, 5)
    lines = [x for x in d.stderr_lines if STALL_LOG in x]
    assert len(lines) == 1, lines
    assert f"closing connection {label_prefix}" in lines[0], lines[0]
    assert "abcdefghi" not in d.stderr, "frame contents must never be logged"


# ---------------------------------------------------------------------------------------------- the socket


def test_a_socket_peer_that_stops_reading_a_turn_is_closed(stall_daemon: tuple[Daemon, str]) -> None:
    d, _ = stall_daemon
    with RawClient(d.socket_path) as c:
        c.initialize()
        sid = call(c, "session/new", 2, {})["sessionId"]
        c.sock.sendall(line(frame("session/prompt", 3, {"sessionId": sid, "prompt": BIG_PROMPT})))
        started = time.monotonic()  # and never read again
        wait_closed(d, started)
    assert_logged_once(d, "unix:")
    assert_serves_others(d)


def test_a_socket_peer_with_a_few_large_answers_queued_is_closed(stall_daemon: tuple[Daemon, str]) -> None:
    """No producer waits here: the answers are queued at once, and the rule applies all the same."""
    d, _ = stall_daemon
    with RawClient(d.socket_path) as c:
        c.initialize()
        sid = call(c, "session/new", 2, {})["sessionId"]
        assert len(call(c, "session/prompt", 3, {"sessionId": sid, "prompt": BIG_PROMPT})["content"]) > 900_000
        c.sock.sendall(b"".join(line(frame("session/messages", 10 + i, {"sessionId": sid})) for i in range(4)))
        started = time.monotonic()  # about 8 MB of answers, never read
        wait_closed(d, started)
    assert_logged_once(d, "unix:")
    assert_serves_others(d)


# ------------------------------------------------------------------------------------------- the WebSocket


class RawWebSocket:
    """A blocking WebSocket client on a plain socket (websockets' sans-I/O protocol): it reads only when told,
    so it can stop reading for good, and its small receive buffer holds little of what the daemon sends."""

    def __init__(self, url: str, *, rcvbuf: int = 16384, timeout: float = 5.0) -> None:
        uri = parse_uri(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((uri.host, uri.port))
        self.protocol = ClientProtocol(uri, max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        self.texts: list[str] = []
        while not any(isinstance(event, Response) for event in self._pump()):
            pass

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.sendall(data)

    def _pump(self) -> list[Any]:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("the daemon closed the WebSocket")
        self.protocol.receive_data(data)
        events = self.protocol.events_received()
        self.texts += [e.data.decode() for e in events if isinstance(e, Frame) and e.opcode == Opcode.TEXT]
        self._flush()  # pongs
        return events

    def send(self, body: dict[str, Any]) -> None:
        self.protocol.send_text(json.dumps(body).encode())
        self._flush()

    def call(self, method: str, rid: Any, params: Any = None) -> dict[str, Any]:
        self.send(frame(method, rid, params))
        while True:
            while not self.texts:
                self._pump()
            answer = json.loads(self.texts.pop(0))
            if "method" not in answer:
                assert answer["id"] == rid and "result" in answer, answer
                result: dict[str, Any] = answer["result"]
                return result

    def close(self) -> None:
        self.sock.close()


def ws_peer(d: Daemon, url: str) -> RawWebSocket:
    with RawClient(d.socket_path) as c:
        c.initialize()
        token = call(c, "pairing/create", 2, {"user": "ops"})["token"]
    ws = RawWebSocket(url)
    assert ws.call("initialize", 1, {"protocolVersion": 1, "authToken": token})["principal"]["id"] == "user:ops"
    return ws


def test_a_websocket_peer_that_stops_reading_a_turn_is_closed(stall_daemon: tuple[Daemon, str]) -> None:
    d, url = stall_daemon
    ws = ws_peer(d, url)
    try:
        sid = ws.call("session/new", 2, {})["sessionId"]
        ws.send(frame("session/prompt", 3, {"sessionId": sid, "prompt": BIG_PROMPT}))
        started = time.monotonic()  # and never read again
        wait_closed(d, started)
    finally:
        ws.close()
    assert_logged_once(d, "ws:127.0.0.1:")
    d.audit_until(lambda entries: any(e["event"] == "disconnect" and e["peer"].startswith("ws:") for e in entries))
    assert_serves_others(d)


def daemon_side_established(server_port: int, client_port: int) -> bool:
    """Whether the daemon's end of a loopback TCP connection is still ESTABLISHED (Linux's /proc/net/tcp)."""
    for row in open("/proc/net/tcp").read().splitlines()[1:]:  # noqa: SIM115  # a /proc file, read whole
        local, remote, state = row.split()[1:4]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == client_port:
            return state == "01"
    return False


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's TCP table")
def test_regression_a_websocket_peer_cut_off_is_disconnected_at_once_not_at_the_tcp_timeout(
    stall_daemon: tuple[Daemon, str],
) -> None:
    """Issue 29 §4.12: the daemon dropped the peer, but its TCP connection stayed ESTABLISHED, the close waiting
    on the data the peer does not read, until `TCP_USER_TIMEOUT` (60 s). Now the connection is aborted."""
    d, url = stall_daemon
    ws = ws_peer(d, url)
    server_port, client_port = ws.sock.getpeername()[1], ws.sock.getsockname()[1]
    try:
        sid = ws.call("session/new", 2, {})["sessionId"]
        ws.send(frame("session/prompt", 3, {"sessionId": sid, "prompt": BIG_PROMPT}))
        started = time.monotonic()  # and never read again
        assert daemon_side_established(server_port, client_port)
        wait_closed(d, started)
        until_sync(
            lambda: not daemon_side_established(server_port, client_port),
            3,
            interval=0.05,
            what="the daemon's end of the TCP connection to be gone",
        )
    finally:
        ws.close()


def test_a_websocket_peer_with_a_few_large_answers_queued_is_closed(stall_daemon: tuple[Daemon, str]) -> None:
    d, url = stall_daemon
    ws = ws_peer(d, url)
    try:
        sid = ws.call("session/new", 2, {})["sessionId"]
        assert len(ws.call("session/prompt", 3, {"sessionId": sid, "prompt": BIG_PROMPT})["content"]) > 900_000
        for i in range(4):
            ws.send(frame("session/messages", 10 + i, {"sessionId": sid}))
        started = time.monotonic()  # never read
        wait_closed(d, started)
    finally:
        ws.close()
    assert_logged_once(d, "ws:127.0.0.1:")
    assert_serves_others(d)


def test_a_websocket_peer_that_reads_is_not_cut_off(stall_daemon: tuple[Daemon, str]) -> None:
    """The same big turn, read to its end: far more than the limit goes through, nobody is closed."""
    d, url = stall_daemon
    ws = ws_peer(d, url)
    try:
        sid = ws.call("session/new", 2, {})["sessionId"]
        marker = uuid.uuid4().hex
        result = ws.call("session/prompt", 3, {"sessionId": sid, "prompt": f"{marker} {BIG_PROMPT}"})
        assert result["content"].startswith(f"You said: «{marker} abcdefghi")
        assert connections(d) == 1
    finally:
        ws.close()
    assert not [x for x in d.stderr_lines if STALL_LOG in x]
