"""The endpoint lock's Windows branch (app/endpoint_lock.py), on Linux with a fake `msvcrt`: Windows' byte-range
locks are mandatory, so the lock sits past the pid, where a second daemon can still read who holds it."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from app import endpoint_lock
from app.endpoint_lock import AlreadyRunning, EndpointLock


class FakeMsvcrt(types.ModuleType):
    LK_NBLCK = 2

    def __init__(self) -> None:
        super().__init__("msvcrt")
        self.held: set[int] = set()  # offsets locked by "another process"
        self.calls: list[tuple[int, int, int]] = []

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        offset = os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((offset, mode, nbytes))
        if offset in self.held:
            raise PermissionError(13, "Permission denied")
        self.held.add(offset)


@pytest.fixture
def msvcrt(monkeypatch: pytest.MonkeyPatch) -> FakeMsvcrt:
    fake = FakeMsvcrt()
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(endpoint_lock.sys, "platform", "win32")
    return fake


@pytest.mark.req("R-PATH-4")
def test_the_lock_is_one_byte_past_the_pid(tmp_path: Path, msvcrt: FakeMsvcrt) -> None:
    lock = EndpointLock(tmp_path / "daemon.lock")
    lock.acquire()
    try:
        assert msvcrt.calls == [(endpoint_lock._WIN_LOCK_OFFSET, FakeMsvcrt.LK_NBLCK, 1)]
        assert (tmp_path / "daemon.lock").read_bytes() == f"{os.getpid()}\n".encode()
        assert len(str(2**32)) + 1 < endpoint_lock._WIN_LOCK_OFFSET  # any pid fits before the locked byte
    finally:
        lock.release()


@pytest.mark.req("R-PATH-4")
def test_a_second_daemon_learns_the_pid_of_the_first(tmp_path: Path, msvcrt: FakeMsvcrt) -> None:
    first = EndpointLock(tmp_path / "daemon.lock")
    first.acquire()
    try:
        with pytest.raises(AlreadyRunning) as info:
            EndpointLock(tmp_path / "daemon.lock").acquire()
        assert info.value.pid == os.getpid()
    finally:
        first.release()
