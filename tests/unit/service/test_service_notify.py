"""`app.service.notify` (R-SVC-2): the sd_notify datagrams, the variables it takes, and a manager that is gone."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.service.notify import Notifier, from_env

pytestmark = pytest.mark.skipif(os.name != "posix", reason="AF_UNIX datagrams")


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(tmp_path / "notify"))
    s.settimeout(2)
    yield str(tmp_path / "notify"), s
    s.close()


def fields(sock: socket.socket) -> dict[str, str]:
    return dict(line.split("=", 1) for line in sock.recv(4096).decode().splitlines())


@pytest.mark.req("R-SVC-2")
def test_ready_reloading_stopping(receiver: tuple[str, socket.socket]) -> None:
    address, sock = receiver
    notifier = Notifier(address)
    notifier.status = lambda: "serving here"
    notifier.ready()
    assert fields(sock) == {"READY": "1", "STATUS": "serving here"}
    before = time.monotonic_ns() // 1000
    notifier.reloading()
    reloading = fields(sock)
    assert reloading["RELOADING"] == "1" and before <= int(reloading["MONOTONIC_USEC"]) <= time.monotonic_ns() // 1000
    notifier.reloaded()
    assert fields(sock)["READY"] == "1"
    notifier.stopping()
    assert fields(sock) == {"STOPPING": "1", "STATUS": "stopping"}
    notifier.close()


@pytest.mark.req("R-SVC-2")
def test_an_abstract_address() -> None:
    name = f"zeroclaw-unit-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        assert Notifier("@" + name).send("READY=1")
        assert sock.recv(100) == b"READY=1"


@pytest.mark.req("R-SVC-2")
def test_a_manager_that_is_gone_is_logged_once_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = Notifier(str(tmp_path / "nobody"))
    with caplog.at_level(logging.DEBUG, logger="zeroclaw.notify"):
        assert notifier.send("READY=1") is False
        assert notifier.send("WATCHDOG=1") is False
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


@pytest.mark.req("R-SVC-2")
def test_from_env_takes_the_variables(tmp_path: Path) -> None:
    env = {"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "77", "OTHER": "1"}
    notifier = from_env(env, pid=77)
    assert notifier is not None and notifier._watchdog_usec == 2_000_000
    assert env == {"OTHER": "1"}  # a tool's child process cannot speak for the daemon
    assert from_env({}) is None
    other_pid = from_env({"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "78"}, pid=77)
    garbage = from_env({"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "soon"}, pid=77)
    assert other_pid is not None and other_pid._watchdog_usec is None
    assert garbage is not None and garbage._watchdog_usec is None


@pytest.mark.req("R-SVC-2")
async def test_watchdog_every_half_period_until_stopping(receiver: tuple[str, socket.socket]) -> None:
    address, sock = receiver
    notifier = Notifier(address, watchdog_usec=100_000)
    notifier.start_watchdog()
    await asyncio.sleep(0.28)  # pings at 0, 0.05, 0.10, ... s
    notifier.stopping()
    sock.settimeout(0.1)
    got = []
    while True:
        try:
            got.append(sock.recv(100))
        except TimeoutError:
            break
    assert got[-1].startswith(b"STOPPING=1")
    assert 4 <= got.count(b"WATCHDOG=1") <= 7, got
    notifier.close()
