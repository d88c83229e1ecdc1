"""Frame limit, memory bound and connection cap over a real socket (R-WIRE-2, R-LIM)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import DEFAULT_FRAME_LIMIT, ConnectionClosed, Daemon, DaemonFactory, RawClient, error_of
from waiting import until

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

SMALL_LIMIT = 65536
MIB = 1024 * 1024


def status_frame(total: int, rid: object = 1, *, crlf: bool = False) -> bytes:
    """A valid `status` request padded with JSON whitespace to exactly `total` bytes, line ending included."""
    ending = b"\r\n" if crlf else b"\n"
    head = b'{"jsonrpc":"2.0","method":"status","id":' + str(rid).encode()  # rid is JSON text
    pad = total - len(head) - 1 - len(ending)
    assert pad >= 0
    return head + b" " * pad + b"}" + ending


def assert_frame_too_large(frames: list[dict[str, Any]], limit: int) -> None:
    """Exactly one frame before the close: `-32600`, `id: null`, `frame_too_large`, `data.limit`."""
    assert len(frames) == 1, frames
    frame = frames[0]
    assert frame["id"] is None, frame
    code, data = error_of(frame)
    assert code == -32600
    assert data["kind"] == "frame_too_large"
    assert data["limit"] == limit


def send_oversize(path: Path, payload: bytes, *, chunk: int = 1024 * 1024, init: bool = True) -> list[dict[str, Any]]:
    with RawClient(path) as raw:
        if init:
            raw.initialize()
        raw.send_all(payload, chunk=chunk)
        return raw.read_until_eof(timeout=10)


@pytest.fixture(scope="module")
def small_limit_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start({"limits": {"max_frame_bytes": SMALL_LIMIT}})
    finally:
        factory.close()


@pytest.mark.req("R-WIRE-2")
@pytest.mark.req("R-LIM")
@pytest.mark.parametrize("total", [SMALL_LIMIT - 1, SMALL_LIMIT], ids=["just-under", "exactly-at"])
@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
async def test_configured_limit_frames_within_are_served(small_limit_daemon: Daemon, total: int, crlf: bool) -> None:
    async with await small_limit_daemon.client() as c:
        await c.send_raw(status_frame(total, '"big"', crlf=crlf))
        frame = await c.recv()
        assert frame["id"] == "big" and "result" in frame, frame
        assert (await c.call("status"))["pid"] == small_limit_daemon.pid


@pytest.mark.req("R-WIRE-2")
@pytest.mark.req("R-LIM")
@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
async def test_configured_limit_frame_just_over_is_refused_and_closed(small_limit_daemon: Daemon, crlf: bool) -> None:
    frames = await asyncio.to_thread(
        send_oversize, small_limit_daemon.socket_path, status_frame(SMALL_LIMIT + 1, 9, crlf=crlf)
    )
    assert_frame_too_large(frames, SMALL_LIMIT)
    async with await small_limit_daemon.client() as c:  # the daemon is fine
        assert (await c.call("status"))["pid"] == small_limit_daemon.pid


@pytest.mark.req("R-WIRE-2")
async def test_configured_limit_oversize_in_small_writes(small_limit_daemon: Daemon) -> None:
    frames = await asyncio.to_thread(
        send_oversize, small_limit_daemon.socket_path, status_frame(SMALL_LIMIT + 1, 10), chunk=4096
    )
    assert_frame_too_large(frames, SMALL_LIMIT)


@pytest.mark.req("R-WIRE-2")
async def test_oversize_is_refused_without_waiting_for_a_newline(small_limit_daemon: Daemon) -> None:
    # the line never ends: the daemon must answer and close once the limit is crossed
    frames = await asyncio.to_thread(
        send_oversize, small_limit_daemon.socket_path, b"x" * (SMALL_LIMIT + 10), init=False
    )
    assert_frame_too_large(frames, SMALL_LIMIT)


@pytest.mark.req("R-WIRE-5")
@pytest.mark.req("R-WIRE-2")
async def test_request_before_an_oversize_frame_in_the_same_write_is_still_answered(
    small_limit_daemon: Daemon,
) -> None:
    """A complete request followed by an oversize line in one write: the request was received whole, so it
    gets its answer (R-WIRE-5) before the frame_too_large error and the close. Whether it is answered must not
    depend on how the kernel splits the stream into reads."""

    def run() -> list[dict[str, Any]]:
        with RawClient(small_limit_daemon.socket_path) as raw:
            raw.initialize()
            raw.send_all(b'{"jsonrpc":"2.0","method":"status","id":"before"}\n' + b"x" * (SMALL_LIMIT + 4096))
            return raw.read_until_eof(timeout=10)

    frames = await asyncio.to_thread(run)
    assert [f.get("id") for f in frames] == ["before", None], frames
    assert "result" in frames[0], frames
    assert_frame_too_large(frames[1:], SMALL_LIMIT)


@pytest.mark.req("R-WIRE-2")
async def test_default_limit_8mib(daemon: Daemon) -> None:
    def run() -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        with RawClient(daemon.socket_path, timeout=20) as raw:
            raw.initialize()
            raw.send_all(status_frame(DEFAULT_FRAME_LIMIT - 1, '"under"'))
            under = raw.recv_frame(timeout=20)
            raw.send_all(status_frame(DEFAULT_FRAME_LIMIT, '"at"'))  # 8,388,607 bytes + newline
            at = raw.recv_frame(timeout=20)
            raw.send_all(status_frame(DEFAULT_FRAME_LIMIT + 1, '"over"'))  # 8,388,608 bytes + newline
            return under, at, raw.read_until_eof(timeout=20)

    under, at, frames = await asyncio.to_thread(run)
    assert under["id"] == "under" and "result" in under, under
    assert at["id"] == "at" and "result" in at, at
    assert_frame_too_large(frames, DEFAULT_FRAME_LIMIT)


@pytest.mark.req("R-WIRE-2")
@pytest.mark.req("R-LIM")
async def test_64mib_without_newline_keeps_memory_bounded(daemon: Daemon) -> None:
    baseline = daemon.proc_status("VmRSS")
    hwm_before = daemon.proc_status("VmHWM")
    samples = [baseline]

    def run() -> tuple[int, list[dict[str, Any]]]:
        with RawClient(daemon.socket_path, timeout=10) as raw:
            sent = raw.send_all(b"a" * (64 * MIB), on_chunk=lambda _n: samples.append(daemon.proc_status("VmRSS")))
            return sent, raw.read_until_eof(timeout=10)

    sent, frames = await asyncio.to_thread(run)
    assert_frame_too_large(frames, DEFAULT_FRAME_LIMIT)
    assert sent < 64 * MIB, "the daemon kept reading 64 MiB of one line instead of closing the connection"
    samples.append(daemon.proc_status("VmRSS"))
    growth = max(max(samples) - baseline, daemon.proc_status("VmHWM") - hwm_before)
    assert growth < 40 * MIB, f"daemon RSS grew by {growth / MIB:.1f} MiB while reading one oversize line"
    async with await daemon.client() as c:
        assert (await c.call("status"))["pid"] == daemon.pid


# ------------------------------------------------------------------------------------- max_connections


@pytest.mark.req("R-LIM")
@pytest.mark.req("R-SEC-3")
async def test_max_connections_cap(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start({"limits": {"max_connections": 2}})
    a = await d.client()
    b = await d.connect()  # counted at accept, initialized or not
    try:
        third = await d.connect()
        frames = await third.expect_eof(timeout=5)
        assert len(frames) == 1, frames
        frame = json.loads(frames[0])
        assert frame["id"] is None
        code, data = error_of(frame)
        assert code == -32005
        assert data["kind"] == "limit_exceeded"
        assert data["name"] == "connections"
        assert data["limit"] == 2
        await third.close()
        status = await a.call("status")
        assert status["connections"] == 2
        # a refused connection is audited as denied
        await d.wait_audit(lambda entries: any(e["event"] == "denied" for e in entries))
    finally:
        await b.close()

    # once a slot is free a new connection is served
    async def served() -> Any:
        c = await d.connect()
        try:
            await c.initialize()
        except (ConnectionClosed, AssertionError):
            await c.close()
            return None
        return c

    await (await until(served, 5, interval=0.05, what="a connection served once a slot is free")).close()
    await a.close()
