"""Readiness messages (R-SVC-2) from the real daemon to a `NOTIFY_SOCKET` datagram receiver in the test, standing
in for systemd: READY=1 once the socket answers, RELOADING=1 + READY=1 around a config.toml edit, STOPPING=1 at
SIGTERM, WATCHDOG=1 every WATCHDOG_USEC/2; and a manager that went away never hurts the daemon.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
from e2e_harness import Client, DaemonFactory
from waiting import until_sync

pytestmark = pytest.mark.skipif(os.name != "posix", reason="AF_UNIX datagrams")

WAIT = 10.0


class Receiver:
    """A bound AF_UNIX datagram socket; every message kept with the monotonic time it arrived. `on_ready` runs in
    the receiving thread the moment a READY=1 arrives (before the next datagram is read)."""

    def __init__(self, address: str, on_ready: object = None) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(0.05)
        self.messages: list[tuple[float, dict[str, str]]] = []
        self.on_ready = on_ready
        self.ready_checks: list[object] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="notify-receiver", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            arrived = time.monotonic()
            fields = dict(line.split("=", 1) for line in data.decode().splitlines())
            if "READY" in fields and callable(self.on_ready):
                self.ready_checks.append(self.on_ready())  # before the message shows: waiters see both
            self.messages.append((arrived, fields))

    def having(self, key: str) -> list[dict[str, str]]:
        return [fields for _t, fields in self.messages if key in fields]

    def wait_for(self, key: str, count: int = 1, timeout: float = WAIT) -> list[dict[str, str]]:
        try:
            return until_sync(lambda: len(found := self.having(key)) >= count and found, timeout, interval=0.01)
        except AssertionError:
            raise AssertionError(f"{count} x {key} never came; got {self.messages}") from None

    def drain(self) -> None:
        """Return once every datagram sent before now has been read: datagrams to one socket arrive in order, so
        a marker sent now is read after them."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(b"TEST_MARKER=1", self.address)
        self.wait_for("TEST_MARKER")
        del self.messages[-1]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def initialize_now(path: Path) -> bool:
    """Connect and initialize with a short deadline: does the daemon answer at this very moment?"""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(path))
            s.sendall(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\n')
            return b'"result"' in s.recv(65536)
    except OSError:
        return False


@pytest.mark.req("R-SVC-2")
async def test_ready_after_the_socket_answers_reloading_around_an_edit_and_stopping_at_sigterm(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    endpoint = config_dir / "data" / "daemon.sock"
    receiver = Receiver(str(root / "notify"), on_ready=lambda: initialize_now(endpoint))
    try:
        d = daemon_factory.spawn(
            "[daemon]\nconfig_poll_secs = 0.1\n",
            config_dir=config_dir,
            root=root,
            env={"NOTIFY_SOCKET": str(root / "notify")},
        )
        ready = receiver.wait_for("READY")[0]
        assert receiver.ready_checks == [True], "READY=1 came before the socket answered"
        d.wait_ready()
        assert ready["STATUS"] == f"serving socket={endpoint} gateway=off"
        assert not receiver.having("WATCHDOG"), "no WATCHDOG_USEC, no pings"

        # An edit as an editor saves it: RELOADING=1 (with the monotonic clock, which this process shares), then
        # READY=1 again, and the socket answers after it.
        await asyncio.sleep(0.5)  # 5 polls: the first look at the file (its bytes as loaded) is not a reload
        assert len(receiver.having("READY")) == 1, receiver.messages
        before_edit = time.monotonic_ns() // 1000
        tmp = config_dir / "config.toml.swp"
        tmp.write_text("[daemon]\nconfig_poll_secs = 0.1\n\n[limits]\nmax_connections = 77\n")
        os.replace(tmp, config_dir / "config.toml")
        reloading = receiver.wait_for("RELOADING")[0]
        assert reloading["RELOADING"] == "1"
        assert before_edit <= int(reloading["MONOTONIC_USEC"]) <= time.monotonic_ns() // 1000
        receiver.wait_for("READY", 2)
        keys = [next(iter(fields)) for _t, fields in receiver.messages]
        assert keys == ["READY", "RELOADING", "READY"], receiver.messages
        assert receiver.ready_checks == [True, True]
        async with await Client.connect(endpoint) as c:
            await c.initialize()
            assert (await c.call("config/get", {"prop": "limits.max_connections"}))["value"] == 77

        # SIGHUP: told around it even when the file did not change (what systemd's `reload` sends).
        d.send_signal(signal.SIGHUP)
        receiver.wait_for("RELOADING", 2)
        receiver.wait_for("READY", 3)

        d.send_signal(signal.SIGTERM)
        stopping = receiver.wait_for("STOPPING")[0]
        assert stopping["STOPPING"] == "1"
        assert d.wait_exit() == 0, d.describe()
        assert next(iter(receiver.messages[-1][1])) == "STOPPING"
    finally:
        receiver.close()


@pytest.mark.req("R-SVC-2")
async def test_watchdog_pings_every_half_period_at_an_abstract_address(daemon_factory: DaemonFactory) -> None:
    """`@name` is an abstract socket (no file); WATCHDOG_USEC=200000 → WATCHDOG=1 about every 0.1 s."""
    name = f"zeroclaw-test-notify-{os.getpid()}-{time.monotonic_ns()}"
    receiver = Receiver("\0" + name)
    try:
        d = daemon_factory.start(env={"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "200000"})
        receiver.wait_for("READY")
        pings = receiver.wait_for("WATCHDOG", 6, timeout=3.0)
        assert all(p == {"WATCHDOG": "1"} for p in pings)
        times = [t for t, fields in receiver.messages if "WATCHDOG" in fields]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert 0.05 < sorted(gaps)[len(gaps) // 2] < 0.2, gaps  # the median gap: WATCHDOG_USEC/2 = 0.1 s
        assert d.stop() == 0
        receiver.drain()  # everything the daemon sent before it exited
        keys = [next(iter(fields)) for _t, fields in receiver.messages]
        assert keys[-1] == "STOPPING" and keys.count("STOPPING") == 1, f"pings after STOPPING: {keys}"
    finally:
        receiver.close()


@pytest.mark.req("R-SVC-2")
async def test_watchdog_meant_for_another_pid_is_not_answered(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    receiver = Receiver(str(root / "notify"))
    try:
        env = {"NOTIFY_SOCKET": str(root / "notify"), "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"}
        d = daemon_factory.start(root=root, env=env)
        receiver.wait_for("READY")
        await asyncio.sleep(0.4)  # eight periods of WATCHDOG_USEC/2 in which a ping would come
        receiver.drain()
        assert not receiver.having("WATCHDOG")
        assert d.stop() == 0
    finally:
        receiver.close()


@pytest.mark.req("R-SVC-2")
async def test_a_notify_socket_nobody_listens_on_never_hurts_the_daemon(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    env = {"NOTIFY_SOCKET": str(root / "gone"), "WATCHDOG_USEC": "100000"}
    d = daemon_factory.start(root=root, env=env, args=["--log-level", "debug"])
    async with await d.client() as c:
        assert (await c.call("status"))["pid"] == d.pid
    await asyncio.sleep(0.3)  # several watchdog pings into nothing
    assert d.stop() == 0, d.describe()
    failures = [line for line in d.stderr_lines if "NOTIFY_SOCKET cannot be reached" in line]
    assert len(failures) == 1, d.stderr  # said once, at debug
    assert " DEBUG " in failures[0]
