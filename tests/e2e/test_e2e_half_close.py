"""End of input is not the end of the conversation (R-WIRE-9, §13), against a real daemon.

A client that writes its requests and then shuts down its sending side (`shutdown(SHUT_WR)`, what
`printf … | socat - UNIX-CONNECT:…` does) gets every answer, a turn streams to its end, and only then does the
daemon close. A question the daemon would have to ask that client (an elicitation) fails at once, since no answer
can come. An approval is the session's, not the connection's (R-MULTI-3): it stays pending until its timeout, and
any client of the owner that attaches may answer it. A client that disconnects fully gets nothing more, and the
turn behaves as on disconnect.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import socket
import subprocess
import time
import uuid
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory, RawClient
from waiting import until_sync

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-WIRE-9")]

LONG = 30.0  # ask/approval timeouts: a test that waits for one of them fails on the time bound instead

INIT = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 1}
INIT_ELICIT = {
    "jsonrpc": "2.0",
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}},
    "id": 1,
}


def req(method: str, rid: Any, params: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        frame["params"] = params
    return frame


def ndjson(*frames: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(f, separators=(",", ":")).encode() + b"\n" for f in frames)


def sid() -> str:
    return f"hc-{uuid.uuid4().hex[:12]}"


def half_close(d: Daemon, data: bytes, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Connect, send `data`, shut down the sending side, and return every frame until the daemon closes."""
    with RawClient(d.socket_path) as c:
        c.sock.sendall(data)
        c.sock.shutdown(socket.SHUT_WR)
        return c.read_until_eof(timeout)


def answers(frames: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    for f in frames:
        if "method" not in f:
            assert f["id"] not in out, f"two answers to id {f['id']!r}"
            out[f["id"]] = f
    return out


def updates(frames: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    return [
        f["params"] for f in frames if f.get("method") == "session/update" and f["params"]["sessionId"] == session_id
    ]


def chunks(ups: list[dict[str, Any]]) -> str:
    return "".join(u["text"] for u in ups if u["type"] == "agent_message_chunk")


def assert_daemon_serves(d: Daemon) -> None:
    with RawClient(d.socket_path) as c:
        c.initialize()
        c.sock.sendall(ndjson(req("status", "s")))
        assert "result" in c.recv_frame()


# ----------------------------------------------------------------------------------------------- answers


def call(c: RawClient, method: str, rid: Any, params: Any) -> dict[str, Any]:
    """The result of one call; notifications that come first are skipped."""
    c.sock.sendall(ndjson(req(method, rid, params)))
    while "method" in (answer := c.recv_frame()):
        pass
    assert answer["id"] == rid and "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def open_session(c: RawClient, session_id: str) -> None:
    """initialize (id 1) and session/new (id 2) on a fresh connection, both answered."""
    c.sock.sendall(ndjson(INIT, req("session/new", 2, {"sessionId": session_id})))
    assert c.recv_frame()["id"] == 1 and c.recv_frame()["id"] == 2


def test_answers_to_everything_sent_before_eof_then_the_daemon_closes(daemon: Daemon) -> None:
    frames = half_close(daemon, ndjson(INIT, req("status", 2, {})))
    got = answers(frames)
    assert list(got) == [1, 2], frames
    assert got[1]["result"]["protocolVersion"] == 1
    assert got[2]["result"]["connections"] >= 1
    assert_daemon_serves(daemon)


def test_a_last_line_without_a_newline_is_a_frame(daemon: Daemon) -> None:
    data = ndjson(INIT) + json.dumps(req("status", 2)).encode()  # no "\n" at the end
    got = answers(half_close(daemon, data))
    assert list(got) == [1, 2] and "result" in got[2]
    # a blank or partial-whitespace tail is nothing; a broken one is answered like any malformed frame
    assert list(answers(half_close(daemon, ndjson(INIT) + b"  \r"))) == [1]
    broken = answers(half_close(daemon, ndjson(INIT) + b'{"jsonrpc":"2.0","method":'))
    assert broken[None]["error"]["code"] == -32700


def test_eof_right_after_connecting_closes_at_once(daemon: Daemon) -> None:
    started = time.monotonic()
    assert half_close(daemon, b"") == []
    assert time.monotonic() - started < 3


def test_frames_held_back_by_backpressure_are_all_answered(daemon_factory: DaemonFactory) -> None:
    """Two in-flight slots: the frames behind the running requests wait unread in the daemon, and the end of input
    is read while the slow turn still runs."""
    d = daemon_factory.start({"limits": {"max_inflight_per_connection": 2}})
    a, b = sid(), sid()
    data = ndjson(
        INIT,
        req("session/new", 2, {"sessionId": a}),
        req("session/new", 3, {"sessionId": b}),
        req("session/prompt", 4, {"sessionId": a, "prompt": "/sleep 0.2"}),
        req("session/prompt", 5, {"sessionId": b, "prompt": "/sleep 1"}),
        *(req("status", 100 + i) for i in range(50)),
    )
    frames = half_close(d, data)
    got = answers(frames)
    assert sorted(got, key=str) == sorted([1, 2, 3, 4, 5, *range(100, 150)], key=str), list(got)
    assert all("result" in f for f in got.values()), [f for f in got.values() if "error" in f]
    assert got[4]["result"]["content"].endswith(" Done.") and got[5]["result"]["content"].endswith(" Done.")
    for session_id in (a, b):
        assert updates(frames, session_id)[-1]["type"] == "turn_complete"


# ------------------------------------------------------------------------------------------------- turns


def test_a_streaming_turn_streams_to_its_end_after_eof(daemon: Daemon) -> None:
    s = sid()
    data = ndjson(
        INIT,
        req("session/new", 2, {"sessionId": s}),
        req("session/prompt", 3, {"sessionId": s, "prompt": "/stream 3000"}),
    )
    frames = half_close(daemon, data)
    got = answers(frames)
    assert list(got) == [1, 2, 3], list(got)
    ups = updates(frames, s)
    assert [u["type"] for u in ups].count("agent_message_chunk") == 3000
    assert ups[-1]["type"] == "turn_complete"
    result = got[3]["result"]
    assert result["stopReason"] == "end_turn"
    assert chunks(ups) == result["content"] == ups[-1]["content"] == "lorem " * 3000
    assert frames[-1] == got[3], "the prompt's answer comes last, after its turn_complete"


def test_a_slow_turn_is_waited_for_and_only_then_the_connection_ends(daemon: Daemon) -> None:
    s = sid()
    data = ndjson(
        INIT,
        req("session/new", 2, {"sessionId": s}),
        req("session/prompt", 3, {"sessionId": s, "prompt": "/sleep 1"}),
    )
    with RawClient(daemon.socket_path) as c:
        c.sock.sendall(data)
        c.sock.shutdown(socket.SHUT_WR)
        first = c.recv_frame()
        while first.get("params", {}).get("type") != "agent_message_chunk":  # the turn runs, after our EOF
            first = c.recv_frame()
        peer = f"unix:pid={os.getpid()},"

        def ours(entries: list[dict[str, Any]]) -> list[str]:
            return [e["event"] for e in entries if e["peer"].startswith(peer)]

        entries = daemon.audit_until(lambda entries: "initialize" in ours(entries))  # written by a thread
        assert ours(entries)[-2:] == ["connect", "initialize"], entries  # still connected
        frames = c.read_until_eof(10)
    result = answers(frames)[3]["result"]
    assert result["content"].startswith("Sleeping for") and result["content"].endswith(" Done.")
    # recorded when the connection really ended
    daemon.audit_until(
        lambda entries: [e["event"] for e in entries if e["peer"].startswith(peer)][-1:] == ["disconnect"]
    )


def test_an_ephemeral_daemon_counts_a_half_closed_client_until_it_is_answered(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start({"daemon": {"ephemeral_grace_secs": 0.3}}, args=["--ephemeral"])
    s = sid()
    data = ndjson(
        INIT,
        req("session/new", 2, {"sessionId": s}),
        req("session/prompt", 3, {"sessionId": s, "prompt": "/sleep 1.5"}),
    )
    frames = half_close(d, data)
    assert answers(frames)[3]["result"]["content"].endswith(" Done.")  # the daemon stayed for the whole turn
    assert d.wait_exit(5) == 0


# --------------------------------------------------------------------------------- what it cannot answer


def ask_config() -> dict[str, dict[str, Any]]:
    return {"tools": {"ask_timeout_secs": LONG, "approval_timeout_secs": LONG}}


def test_a_question_asked_after_eof_fails_at_once(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(ask_config())
    s = sid()
    data = ndjson(
        INIT_ELICIT,
        req("session/new", 2, {"sessionId": s}),
        req("session/prompt", 3, {"sessionId": s, "prompt": "/ask Are you there?"}),
    )
    started = time.monotonic()
    frames = half_close(d, data, timeout=LONG)
    elapsed = time.monotonic() - started
    result = answers(frames)[3]["result"]
    assert elapsed < 5, f"the turn waited {elapsed:.1f} s for a client that cannot answer"
    assert result["stopReason"] == "end_turn"
    assert "did not answer within" not in result["content"] and "No answer" in result["content"], result


def test_a_question_pending_at_eof_fails_at_once(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(ask_config())
    s = sid()
    with RawClient(d.socket_path) as c:
        c.sock.sendall(ndjson(INIT_ELICIT, req("session/new", 2, {"sessionId": s})))
        assert c.recv_frame()["id"] == 1 and c.recv_frame()["id"] == 2
        c.sock.sendall(ndjson(req("session/prompt", 3, {"sessionId": s, "prompt": "/ask Still there?"})))
        while c.recv_frame().get("method") != "elicitation/create":
            pass
        started = time.monotonic()
        c.sock.shutdown(socket.SHUT_WR)  # the question is never answered
        frames = c.read_until_eof(LONG)
        elapsed = time.monotonic() - started
    result = answers(frames)[3]["result"]
    assert elapsed < 5, f"the turn waited {elapsed:.1f} s for a client that cannot answer"
    assert "did not answer within" not in result["content"] and "No answer" in result["content"], result


APPROVAL_WAIT = 2.0


def pending_config() -> dict[str, dict[str, Any]]:
    return {"tools": {"ask_timeout_secs": LONG, "approval_timeout_secs": APPROVAL_WAIT}}


@pytest.mark.req("R-MULTI-3")
def test_an_approval_asked_after_eof_waits_its_timeout_then_is_a_reject(daemon_factory: DaemonFactory) -> None:
    """Regression of the rule before R-MULTI-3 (declined at once at EOF): another client could still attach and
    answer, so the request stays pending until `approval_timeout_secs`, and no answer is a reject."""
    d = daemon_factory.start(pending_config())
    s = sid()
    marker = f"/tmp/zc-e2e-must-not-exist-{uuid.uuid4().hex}"
    data = ndjson(
        INIT,
        req("session/new", 2, {"sessionId": s}),
        req("session/prompt", 3, {"sessionId": s, "prompt": f"/bash touch {shlex.quote(marker)}"}),
    )
    started = time.monotonic()
    frames = half_close(d, data, timeout=LONG)
    elapsed = time.monotonic() - started
    ups = [u for u in updates(frames, s) if u["type"] != "usage"]  # R-MODEL-5's own update, not this test's
    assert [u["type"] for u in ups][:4] == ["tool_call", "approval_request", "approval_resolved", "tool_result"]
    assert ups[2]["decision"] == "reject" and "reject" in ups[3]["rawOutput"].lower(), ups[2:4]
    assert answers(frames)[3]["result"]["stopReason"] == "end_turn"
    assert APPROVAL_WAIT - 0.5 <= elapsed < LONG, f"the approval was settled after {elapsed:.1f} s"
    assert not os.path.exists(marker), "a command nobody approved was run"


@pytest.mark.req("R-MULTI-3")
def test_an_approval_pending_at_eof_is_answered_by_a_client_that_attaches_later(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(ask_config())
    s = sid()
    with RawClient(d.socket_path) as c:
        open_session(c, s)
        c.sock.sendall(ndjson(req("session/prompt", 3, {"sessionId": s, "prompt": "/bash echo later-$((6 * 7))"})))
        while (frame := c.recv_frame()).get("params", {}).get("type") != "approval_request":
            pass
        c.sock.shutdown(socket.SHUT_WR)
        with RawClient(d.socket_path) as later:
            later.initialize()
            attached = call(later, "session/attach", "a", {"sessionId": s})
            assert attached["running"] is True and attached["pendingApprovals"] == [frame["params"]["requestId"]]
            approve = {"sessionId": s, "requestId": frame["params"]["requestId"], "decision": "allow_once"}
            assert call(later, "session/approve", "b", approve)["acknowledged"] is True
        frames = c.read_until_eof(10)
    (tool_result,) = [u for u in updates(frames, s) if u["type"] == "tool_result"]
    assert "later-42" in tool_result["rawOutput"], tool_result


def test_an_approval_another_client_watches_still_waits_for_it(daemon_factory: DaemonFactory) -> None:
    """A second open client watching the session answers what the one that ended its input was asked."""
    d = daemon_factory.start(ask_config())
    s = sid()
    with RawClient(d.socket_path) as watcher, RawClient(d.socket_path) as c:
        watcher.initialize()
        open_session(c, s)
        watcher.sock.sendall(ndjson(req("session/new", "w", {"sessionId": s})))
        assert watcher.recv_frame()["id"] == "w"
        c.sock.sendall(ndjson(req("session/prompt", 3, {"sessionId": s, "prompt": "/bash echo approved-$((6 * 7))"})))
        c.sock.shutdown(socket.SHUT_WR)
        while (frame := watcher.recv_frame()).get("params", {}).get("type") != "approval_request":
            pass
        time.sleep(0.3)  # it stays pending: nothing declines it
        approve = {"sessionId": s, "requestId": frame["params"]["requestId"], "decision": "allow_once"}
        watcher.sock.sendall(ndjson(req("session/approve", "a", approve)))
        frames = c.read_until_eof(10)
    (tool_result,) = [u for u in updates(frames, s) if u["type"] == "tool_result"]
    assert "approved-42" in tool_result["rawOutput"], tool_result


def test_a_peer_that_disconnects_fully_gets_nothing_and_its_turn_goes_on(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(ask_config())
    s = sid()
    with RawClient(d.socket_path) as c:
        open_session(c, s)
        c.sock.sendall(ndjson(req("session/prompt", 3, {"sessionId": s, "prompt": "/bash echo hi"})))
        while (frame := c.recv_frame()).get("params", {}).get("type") != "approval_request":
            pass
    # closed both ways: its turn goes on, and its approval waits for whoever attaches (R-MULTI-3)
    with RawClient(d.socket_path) as second:
        second.initialize()
        assert call(second, "session/attach", "a", {"sessionId": s})["running"] is True
        reject = {"sessionId": s, "requestId": frame["params"]["requestId"], "decision": "reject"}
        assert call(second, "session/approve", "r", reject)["acknowledged"] is True
        ids = itertools.count()

        def finished() -> list[dict[str, Any]] | None:
            rows: list[dict[str, Any]] = call(second, "session/messages", next(ids), {"sessionId": s})["messages"]
            return rows if rows and rows[-1]["role"] == "assistant" else None

        rows = until_sync(finished, 10, interval=0.05, what="the turn's last row")
        assert [r["role"] for r in rows] == ["user", "tool_call", "tool_result", "assistant"], rows
        assert "reject" in rows[2]["content"].lower(), rows[2]


# ---------------------------------------------------------------------------------------- the one-liners


@pytest.mark.skipif(shutil.which("socat") is None, reason="needs socat (.ci/run installs it)")
def test_the_printf_socat_one_liner_prints_the_answer(daemon: Daemon) -> None:
    """The issue's one-liner, exactly: `printf '…\\n' | socat -t 3 - UNIX-CONNECT:$SOCK`."""
    line = '{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\\n'
    command = f"printf '{line}' | socat -t 3 - UNIX-CONNECT:{shlex.quote(str(daemon.socket_path))}"
    started = time.monotonic()
    run = subprocess.run(["bash", "-c", command], capture_output=True, timeout=20, check=False)
    assert run.returncode == 0, run.stderr
    (answer,) = [json.loads(x) for x in run.stdout.decode().splitlines()]
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
    assert time.monotonic() - started < 3, "the daemon closes once it has answered, socat does not time out"
    # §13: the quick test's two frames piped in one go print both answers
    two = line + '{"jsonrpc":"2.0","method":"status","params":{},"id":2}\\n'
    command = f"printf '{two}' | socat - UNIX-CONNECT:{shlex.quote(str(daemon.socket_path))}"
    run = subprocess.run(["bash", "-c", command], capture_output=True, timeout=20, check=False)
    assert [json.loads(x)["id"] for x in run.stdout.decode().splitlines()] == [1, 2]
