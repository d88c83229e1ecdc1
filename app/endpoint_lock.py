"""The single-owner lock on `<endpoint>.lock` (R-PATH-4): held for the daemon's whole life, holds its pid."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

__all__ = ["AlreadyRunning", "EndpointLock"]


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None) -> None:
        super().__init__(pid)
        self.pid = pid


class EndpointLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        old_umask = os.umask(0o177)
        try:
            fd = os.open(self.path, flags, 0o600)  # O_NOFOLLOW: a planted symlink fails here (ELOOP)
        finally:
            os.umask(old_umask)
        try:
            _lock(fd)
        except OSError:
            pid = _read_pid(fd)
            os.close(fd)
            raise AlreadyRunning(pid) from None
        os.ftruncate(fd, 0)
        _write_at_start(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the lock; the file stays (unlinking it would race a newcomer)
            self._fd = None


# Windows locks are mandatory: lock a byte past the pid, so a second daemon can still read it.
_WIN_LOCK_OFFSET = 64


def _lock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # from the file position; raises OSError if another process holds it
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _write_at_start(fd: int, data: bytes) -> None:
    if sys.platform == "win32":  # no pwrite; the fd is ours alone
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)
        return
    os.pwrite(fd, data, 0)


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        if sys.platform == "win32":
            os.lseek(fd, 0, os.SEEK_SET)
            return int(os.read(fd, 32).decode().strip())
        return int(os.pread(fd, 32, 0).decode().strip())
    return None
