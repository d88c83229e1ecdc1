"""Ephemeral mode (R-EPH) and the audit log (R-SEC-3) with a real daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from waiting import WaitTimeout, until

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

GRACE = 0.5


def ephemeral(daemon_factory: DaemonFactory, grace: float = GRACE) -> Daemon:
    return daemon_factory.start({"daemon": {"ephemeral_grace_secs": grace}}, args=["--ephemeral"])


async def wait_exit(d: Daemon, timeout: float) -> float:
    """Seconds until the process exits (fails after `timeout`)."""
    started = time.monotonic()
    try:
        await until(lambda: not d.is_running(), timeout, interval=0.02)
    except WaitTimeout:
        raise AssertionError(f"daemon still running after {timeout} s\n{d.describe()}") from None
    return time.monotonic() - started


# ------------------------------------------------------------------------------------------- R-EPH


@pytest.mark.req("R-EPH-1")
async def test_ephemeral_never_exits_before_the_first_client(daemon_factory: DaemonFactory) -> None:
    d = ephemeral(daemon_factory)
    await asyncio.sleep(GRACE * 3)  # a window: three grace periods without any client
    assert d.is_running(), d.describe()
    async with await d.client() as c:
        assert (await c.call("status"))["pid"] == d.pid


@pytest.mark.req("R-EPH-1")
@pytest.mark.req("R-PATH-6")
async def test_ephemeral_exits_after_the_last_client_leaves(daemon_factory: DaemonFactory) -> None:
    d = ephemeral(daemon_factory, grace=1.0)
    sock = d.socket_path
    a = await d.client()
    b = await d.connect()
    await a.close()
    await d.wait_stderr("zeroclaw.audit: disconnect")  # one client left
    await asyncio.sleep(1.5)  # a window past the 1 s grace: `b` is still connected
    assert d.is_running(), "exited while a client was still connected"
    await b.close()
    elapsed = await wait_exit(d, timeout=5)
    assert 0.6 <= elapsed <= 3.0, f"exited {elapsed:.2f} s after the last disconnect (grace 1 s)"
    assert d.wait_exit() == 0, d.describe()
    assert not os.path.lexists(sock)


@pytest.mark.req("R-EPH-1")
async def test_ephemeral_reconnect_within_grace_cancels_the_exit(daemon_factory: DaemonFactory) -> None:
    d = ephemeral(daemon_factory)
    c = await d.connect()
    await c.close()
    await d.wait_stderr("zeroclaw.audit: disconnect")  # the last client has gone: the exit is pending now
    async with await d.client() as again:
        await asyncio.sleep(GRACE * 2.5)  # well past the original deadline
        assert d.is_running(), "the reconnect did not cancel the pending exit"
        assert (await again.call("status"))["pid"] == d.pid
    await wait_exit(d, timeout=GRACE + 4)
    assert d.wait_exit() == 0


@pytest.mark.req("R-EPH-1")
async def test_ephemeral_exit_says_why(daemon_factory: DaemonFactory) -> None:
    """issue 38 §5.11: the daemon stopped without a word; now one line says why."""
    d = ephemeral(daemon_factory)
    c = await d.connect()
    await c.close()
    await wait_exit(d, timeout=GRACE + 4)
    assert d.wait_exit() == 0
    stopping = [line for line in d.stderr_lines if "stopping:" in line]
    assert len(stopping) == 1 and stopping[0].endswith(f"stopping: no client for {GRACE:g} s (--ephemeral)"), d.stderr


@pytest.mark.req("R-PATH-6")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_that_stops_the_daemon_is_named(daemon_factory: DaemonFactory, sig: signal.Signals) -> None:
    d = daemon_factory.start()
    assert d.stop(sig) == 0
    stopping = [line for line in d.stderr_lines if "stopping:" in line]
    assert len(stopping) == 1 and stopping[0].endswith(f"stopping: {sig.name} received"), d.stderr


@pytest.mark.req("R-EPH-2")
async def test_not_ephemeral_keeps_running_after_clients_leave(daemon: Daemon) -> None:
    c = await daemon.client()
    await c.close()
    await daemon.wait_stderr("zeroclaw.audit: disconnect")
    await asyncio.sleep(1.3)  # a window longer than the default 1 s grace
    assert daemon.is_running()
    async with await daemon.client() as c:
        assert (await c.call("status"))["pid"] == daemon.pid


# ------------------------------------------------------------------------------------------ R-SEC-3


def events_for(entries: list[dict[str, Any]], peer: str) -> list[str]:
    return [e["event"] for e in entries if e.get("peer") == peer]


@pytest.mark.req("R-SEC-3")
async def test_audit_log_connect_initialize_disconnect(daemon: Daemon) -> None:
    peer = f"unix:pid={os.getpid()},uid={os.getuid()}"
    async with await daemon.client():
        pass
    entries = await daemon.wait_audit(lambda es: events_for(es, peer)[-3:] == ["connect", "initialize", "disconnect"])
    mine = [e for e in entries if e.get("peer") == peer]
    for e in mine:
        assert set(e) >= {"time", "event", "peer", "principal"}, e
        assert isinstance(e["time"], str) and e["time"]
    connect, init, disconnect = mine[-3:]
    assert connect["principal"] is None  # null until known
    assert init["principal"] == "owner"
    assert disconnect["principal"] in ("owner", None)
    # mirrored to stderr at info level (regression: checked at once, the line could still be on its way)
    await daemon.wait_stderr(lambda line: "initialize" in line and peer in line)


@pytest.mark.req("R-SEC-3")
async def test_audit_log_denied_for_auth_required(daemon: Daemon) -> None:
    peer = f"unix:pid={os.getpid()},uid={os.getuid()}"
    async with await daemon.connect() as c:
        response = await c.request("status")
        assert response["error"]["code"] == -32010
    await daemon.wait_audit(lambda es: "denied" in events_for(es, peer))


@pytest.mark.req("R-SEC-3")
async def test_audit_log_denied_for_version_mismatch(daemon: Daemon) -> None:
    peer = f"unix:pid={os.getpid()},uid={os.getuid()}"
    async with await daemon.connect() as c:
        response = await c.request("initialize", {"protocolVersion": 2})
        assert response["error"]["code"] == -32011
    await daemon.wait_audit(lambda es: "denied" in events_for(es, peer))


@pytest.mark.req("R-SEC-3")
@pytest.mark.req("R-SEC-6")
async def test_audit_log_and_stderr_never_contain_frame_contents(daemon: Daemon) -> None:
    secret = "zc_" + "5e" * 32
    async with await daemon.connect() as c:
        await c.send_raw(b'{"jsonrpc":"2.0","method":"initialize","params":{"authToken":"' + secret.encode())
        await c.send_raw(b'"},"id":"tok"}\n')  # completes the frame: an unknown token
        await c.recv()
        await c.send_raw(b'{"broken":"' + secret.encode() + b'"\n')  # parse error
        await c.recv()
        await c.send_raw(b'{"jsonrpc":"2.0","result":"' + secret.encode() + b'"}\n')  # dropped response
        await c.initialize()
    await daemon.wait_audit(lambda es: any(e["event"] == "disconnect" for e in es))
    assert secret not in daemon.audit_path.read_text()
    assert secret not in daemon.stderr
