"""The wire protocol over a real socket: handshake, envelope rules, error codes (R-WIRE, R-INIT, R-ERR)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import shutil
from typing import Any

import pytest
from e2e_harness import Client, Daemon, error_of

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

PROBE_ID = "probe-after"


async def assert_next_frame_answers_probe(c: Client) -> None:
    """Send a valid request; the very next frame must be its answer (proves nothing else was sent before)."""
    await c.send({"jsonrpc": "2.0", "method": "status", "id": PROBE_ID})
    frame = await c.recv()
    assert frame.get("id") == PROBE_ID, f"expected only the probe's answer, got {frame}"
    assert "result" in frame, frame


# --------------------------------------------------------------------------------------- SPEC §13


@pytest.mark.req("R-CLI")
async def test_quick_test_through_socat(shared_daemon: Daemon) -> None:
    """SPEC §13 exactly: two lines typed into `socat … UNIX-CONNECT:<socket>`, two answers back."""
    assert shutil.which("socat"), "socat is required (.ci/run installs Debian's socat)"
    proc = await asyncio.create_subprocess_exec(
        "socat",
        "-",
        f"UNIX-CONNECT:{shared_daemon.socket_path}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\n')
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"status","params":{},"id":2}\n')
        await proc.stdin.drain()
        first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 5))
        second = json.loads(await asyncio.wait_for(proc.stdout.readline(), 5))
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    assert first["jsonrpc"] == "2.0" and first["id"] == 1, first
    assert first["result"]["protocolVersion"] == 1
    assert second["jsonrpc"] == "2.0" and second["id"] == 2, second
    assert second["result"]["pid"] == shared_daemon.pid
    assert second["result"]["endpoint"] == str(shared_daemon.socket_path)


# -------------------------------------------------------------------------------------- R-INIT


@pytest.mark.req("R-INIT-1")
async def test_method_before_initialize_is_auth_required(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        response = await c.request("status", {}, id=5)
        code, data = error_of(response)
        assert code == -32010
        assert data["kind"] == "auth_required"
        assert "initialize" in response["error"]["message"]
        # still usable: initialize then status works
        await c.initialize()
        assert "pid" in await c.call("status")


@pytest.mark.req("R-INIT-1")
@pytest.mark.req("R-WIRE-3")
async def test_unknown_method_before_initialize_is_method_not_found(shared_daemon: Daemon) -> None:
    # order of checks: unknown method (-32601) before "not yet initialized" (-32010)
    async with await shared_daemon.connect() as c:
        code, data = error_of(await c.request("no/such/method", {}))
        assert code == -32601
        assert data["kind"] == "method_not_found"


@pytest.mark.req("R-INIT-1")
async def test_notifications_before_initialize_are_ignored(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        await c.notify("status", {})
        await c.notify("no/such/method")
        result = await c.call("initialize", {"protocolVersion": 1})  # the next frame is initialize's answer
        assert result["protocolVersion"] == 1


@pytest.mark.req("R-INIT-3")
@pytest.mark.parametrize("key", ["protocolVersion", "protocol_version"])
@pytest.mark.parametrize("requested", [2, 0, 99])
async def test_version_mismatch(shared_daemon: Daemon, key: str, requested: int) -> None:
    async with await shared_daemon.connect() as c:
        response = await c.request("initialize", {key: requested})
        code, data = error_of(response)
        assert code == -32011
        assert data["kind"] == "version_mismatch"
        assert data["supported"] == [1]
        assert data["requested"] == requested
        # a refused initialize does not initialize the connection
        code, _ = error_of(await c.request("status"))
        assert code == -32010


@pytest.mark.req("R-INIT-4")
async def test_initialize_result_shape(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        result = await c.initialize(clientInfo={"name": "e2e", "version": "0"}, clientCapabilities={})
    assert set(result) >= {"protocolVersion", "serverVersion", "serverPid", "principal", "methods"}
    assert result["protocolVersion"] == 1
    assert result["serverVersion"] == importlib.metadata.version("zeroclaw")
    assert result["serverPid"] == shared_daemon.pid
    assert result["principal"]["id"] == "owner"  # same uid as the daemon (R-AUTH-3)
    assert result["principal"]["admin"] is True
    methods = result["methods"]
    assert isinstance(methods, list) and all(isinstance(m, str) for m in methods)
    assert len(methods) == len(set(methods))
    assert {"initialize", "status"} <= set(methods)


@pytest.mark.req("R-INIT-2")
@pytest.mark.parametrize(
    "params",
    [None, {}, {"protocolVersion": 1}, {"protocol_version": 1}, {"protocolVersion": 1, "clientInfo": None}],
    ids=["no-params", "empty", "camelCase", "snake_case", "null-clientInfo"],
)
async def test_initialize_params_accepted(shared_daemon: Daemon, params: dict[str, Any] | None) -> None:
    async with await shared_daemon.connect() as c:
        result = await c.call("initialize", params)
        assert result["protocolVersion"] == 1
        assert "pid" in await c.call("status")


@pytest.mark.req("R-WIRE-8")
async def test_snake_case_spellings_of_every_initialize_param(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        result = await c.call(
            "initialize",
            {"protocol_version": 1, "client_info": {"name": "e2e", "version": "1"}, "client_capabilities": {}},
        )
        assert result["protocolVersion"] == 1
        assert "serverPid" in result  # outputs are camelCase


@pytest.mark.req("R-WIRE-4")
async def test_initialize_with_invalid_params_is_invalid_params(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        response = await c.request("initialize", {"protocolVersion": "one-SECRET"})
        code, data = error_of(response)
        assert code == -32602
        assert data["kind"] == "invalid_params"
        assert "errors" in data
        assert "one-SECRET" not in json.dumps(response)  # never echo values (R-SEC-6)


@pytest.mark.req("R-INIT-4")
async def test_initialize_twice_reauthenticates(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        again = await c.initialize()
        assert again["principal"]["id"] == "owner"
        assert "pid" in await c.call("status")


# -------------------------------------------------------------------------------------- status


@pytest.mark.req("R-SES")
async def test_status_result_shape(daemon: Daemon) -> None:
    async with await daemon.client() as c, await daemon.client() as other:
        result = await c.call("status", {})
        assert set(result) >= {
            "serverVersion",
            "protocolVersion",
            "pid",
            "uptimeSecs",
            "endpoint",
            "gateway",
            "dataDir",
            "configFile",
            "activeSessions",
            "sessionIds",
            "connections",
        }
        assert result["serverVersion"] == importlib.metadata.version("zeroclaw")
        assert result["protocolVersion"] == 1
        assert result["pid"] == daemon.pid
        assert isinstance(result["uptimeSecs"], int | float) and result["uptimeSecs"] >= 0
        assert result["endpoint"] == str(daemon.socket_path)
        assert result["gateway"] is None  # --no-gateway
        assert result["dataDir"] == str(daemon.data_dir)
        assert daemon.config_dir is not None
        assert result["configFile"] == str(daemon.config_dir / "config.toml")
        assert result["activeSessions"] == 0
        assert result["sessionIds"] == []
        assert result["connections"] == 2  # every open connection, the caller's included
        assert "pid" in await other.call("status")


@pytest.mark.req("R-SES")
async def test_status_params_absent_is_fine(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        assert (await c.call("status"))["pid"] == shared_daemon.pid


# ---------------------------------------------------------------------------------- R-WIRE over the socket


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [b"{", b'{"jsonrpc":"2.0","method":"status","id":1', b"\xff\xfe{}", b'{"jsonrpc":"2.0","method":"\xc3","id":1}'],
    ids=["open-brace", "truncated", "bad-utf8", "truncated-utf8"],
)
async def test_parse_error_keeps_the_connection_usable(shared_daemon: Daemon, line: bytes) -> None:
    async with await shared_daemon.client() as c:
        await c.send_raw(line + b"\n")
        frame = await c.recv()
        assert frame["id"] is None
        code, data = error_of(frame)
        assert code == -32700
        assert data["kind"] == "parse_error"
        await assert_next_frame_answers_probe(c)


# (line, code, id) — frames that must be answered
ANSWERED = [
    (b'{"jsonrpc":"1.0","method":"status","id":5}', -32600, 5),
    (b'{"method":"status","id":"m"}', -32600, "m"),
    (b'{"jsonrpc":"2.0","method":"status","params":true,"id":6}', -32600, 6),
    (b'{"jsonrpc":"2.0","method":"status","params":null,"id":7}', -32600, 7),
    (b'{"jsonrpc":"2.0","method":"status","params":null}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"status","params":3}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"status","id":true}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"status","id":{"a":1}}', -32600, None),
    (b"null", -32600, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc":"2.0","method":"status","id":8}]', -32600, None),
    (b"42", -32600, None),
    (b'"status"', -32600, None),
    (b"{}", -32600, None),
    (b'{"jsonrpc":"2.0"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":3}', -32600, None),
    (b'{"jsonrpc":"2.0","method":null,"id":9}', -32600, None),
    (b'{"jsonrpc":"2.0","method":7,"id":9}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"status","result":1,"id":10}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"status","error":{"code":1,"message":"m"},"id":11}', -32600, None),
    (b'{"jsonrpc":"2.0","method":"no/such/method","id":12}', -32601, 12),
    (b'{"jsonrpc":"2.0","method":"no/such/method","params":{},"id":"u"}', -32601, "u"),
    (b'{"jsonrpc":"2.0","method":"","id":13}', -32601, 13),
    (b'{"jsonrpc":"2.0","method":"status","id":null}', None, None),  # a request with id null is answered
    (b'{"jsonrpc":"2.0","method":"status","id":1.5}', None, 1.5),
]


@pytest.mark.req("R-WIRE-3")
@pytest.mark.req("R-WIRE-4")
@pytest.mark.parametrize(("line", "code", "rid"), ANSWERED, ids=[a[0].decode("utf-8", "replace") for a in ANSWERED])
async def test_envelope_reference_cases_answered(
    shared_daemon: Daemon, line: bytes, code: int | None, rid: Any
) -> None:
    async with await shared_daemon.client() as c:
        await c.send_raw(line + b"\n")
        frame = await c.recv()
        assert frame["id"] == rid, frame
        assert type(frame["id"]) is type(rid), frame
        if code is None:
            assert "result" in frame and "error" not in frame, frame
        else:
            got, data = error_of(frame)
            assert got == code, frame
            assert data["kind"] == {-32600: "invalid_request", -32601: "method_not_found"}[code]
        await assert_next_frame_answers_probe(c)


# frames that must never be answered
SILENT = [
    # malformed response-shaped frames
    b'{"jsonrpc":"2.0","result":1}',
    b'{"jsonrpc":"2.0","result":1,"id":true}',
    b'{"jsonrpc":"2.0","result":1,"id":{"x":1}}',
    b'{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":21}',
    b'{"jsonrpc":"2.0","result":1,"params":{},"id":22}',
    b'{"jsonrpc":"2.0","error":"boom","id":23}',
    b'{"jsonrpc":"2.0","error":{"message":"m"},"id":24}',
    b'{"jsonrpc":"2.0","error":{"code":"1","message":"m"},"id":25}',
    b'{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":26}',
    b'{"jsonrpc":"2.0","error":{"code":1},"id":27}',
    b'{"jsonrpc":"2.0","error":{"code":1,"message":2},"id":28}',
    b'{"jsonrpc":"1.0","result":1,"id":29}',
    b'{"result":1,"id":30}',
    b'{"jsonrpc":"2.0","error":null,"id":31}',
    # valid responses to nothing the daemon asked
    b'{"jsonrpc":"2.0","result":1,"id":"zc-out-0"}',
    b'{"jsonrpc":"2.0","result":null,"id":null}',
    b'{"jsonrpc":"2.0","error":{"code":-1,"message":"no"},"id":"zc-out-9"}',
    b'{"jsonrpc":"2.0","result":{},"id":"probe-after"}',
    # notifications, also for unknown methods
    b'{"jsonrpc":"2.0","method":"no/such/method"}',
    b'{"jsonrpc":"2.0","method":"no/such/method","params":{"a":1}}',
    b'{"jsonrpc":"2.0","method":"status"}',
    # blank lines
    b"",
    b"   \t",
    b"\r",
]


@pytest.mark.req("R-WIRE-3")
@pytest.mark.req("R-WIRE-5")
@pytest.mark.parametrize("line", SILENT, ids=[s.decode() or "<empty>" for s in SILENT])
async def test_never_answered(shared_daemon: Daemon, line: bytes) -> None:
    async with await shared_daemon.client() as c:
        await c.send_raw(line + b"\n")
        await assert_next_frame_answers_probe(c)


@pytest.mark.req("R-WIRE-3")
async def test_all_silent_frames_in_one_burst(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        await c.send_raw(b"\n".join(SILENT) + b"\n")
        await assert_next_frame_answers_probe(c)


@pytest.mark.req("R-WIRE-1")
async def test_crlf_and_blank_lines_accepted(shared_daemon: Daemon) -> None:
    async with await shared_daemon.connect() as c:
        await c.send_raw(
            b"\r\n\n"
            b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\r\n'
            b"\n   \n"
            b'{"jsonrpc":"2.0","method":"status","id":2}\r\n'
        )
        frames = [await c.recv(), await c.recv()]
        assert sorted(f["id"] for f in frames) == [1, 2]
        assert all("result" in f for f in frames), frames


@pytest.mark.req("R-WIRE-1")
async def test_frame_split_across_many_writes(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        line = b'{"jsonrpc":"2.0","method":"status","id":"slow"}\n'
        for i in range(len(line)):
            await c.send_raw(line[i : i + 1])
            if i % 8 == 0:
                await asyncio.sleep(0.005)  # time between writes, so that the daemon reads the frame in pieces
        frame = await c.recv()
        assert frame["id"] == "slow" and "result" in frame


@pytest.mark.req("R-WIRE-6")
async def test_many_requests_in_one_write_each_get_one_answer(shared_daemon: Daemon) -> None:
    async with await shared_daemon.client() as c:
        ids = [f"r{i}" for i in range(50)]
        await c.send_raw(
            b"".join(json.dumps({"jsonrpc": "2.0", "method": "status", "id": i}).encode() + b"\n" for i in ids)
        )
        got = [(await c.recv())["id"] for _ in ids]
        assert sorted(got) == sorted(ids)
        await assert_next_frame_answers_probe(c)


@pytest.mark.req("R-WIRE-7")
async def test_duplicate_ids_in_one_burst_get_exactly_one_answer_each_in_flight(shared_daemon: Daemon) -> None:
    """Identical ids sent back to back: each copy gets either its own result (the previous one had already
    finished) or a `duplicate_id` error with `id: null`; never two errors for one frame, never a stray id."""
    async with await shared_daemon.client() as c:
        n = 20
        frame = b'{"jsonrpc":"2.0","method":"status","id":7}\n'
        await c.send_raw(frame * n)
        results = dups = 0
        for _ in range(n):
            f = await c.recv()
            if "result" in f:
                assert f["id"] == 7, f
                results += 1
            else:
                code, data = error_of(f)
                assert (code, f["id"], data["kind"], data.get("id")) == (-32600, None, "duplicate_id", 7), f
                dups += 1
        assert results >= 1 and results + dups == n
        await assert_next_frame_answers_probe(c)


@pytest.mark.req("R-WIRE-7")
async def test_duplicate_in_flight_id_is_rejected_and_first_request_unaffected(shared_daemon: Daemon) -> None:
    """A slow prompt holds id 1; `status` with id 1 gets exactly one `-32600` (`id: null`,
    `data.kind="duplicate_id"`, `data.id=1`), and the prompt's result is the only frame carrying id 1."""
    async with await Client.connect(shared_daemon.socket_path) as c:
        await c.initialize()
        sid = (await c.call("session/new", {}))["sessionId"]
        await c.send(
            {
                "jsonrpc": "2.0",
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": "/sleep 0.5"},
                "id": 1,
            }
        )
        await c.send({"jsonrpc": "2.0", "method": "status", "id": 1})
        dup = await c.recv_response()
        code, data = error_of(dup)
        assert (code, dup["id"], data["kind"], data["id"]) == (-32600, None, "duplicate_id", 1)
        answer = await c.recv_response(timeout=10)
        assert answer["id"] == 1 and answer["result"]["stopReason"] == "end_turn", answer
        await c.send({"jsonrpc": "2.0", "method": "status", "id": 2})
        assert (await c.recv_response())["id"] == 2
