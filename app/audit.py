"""The audit log (R-SEC-3): one JSON line per connect, initialize, denied and disconnect.

Lines carry who and when, never what: no frame contents, tokens or secrets (R-SEC-6).

A line is made on the event loop and written by one writer thread, in order. A file write can block for
milliseconds when the disk is busy, and on the loop that was a wait for every call in flight (found by
benchmarks/soak.py: the audit write was the loop's most frequent long stall under connect churn). The writer wakes
for a line, then gathers for `GATHER_SECS` and writes what came meanwhile at once: woken for each line, it cost a
connect cycle of the local socket 30 to 60 % more daemon CPU (a connect, an `initialize` and a disconnect are three
lines; benchmarks/churn.py), in thread switches and GIL hand-overs, not in the write. `close()` and `flush()` write
every line recorded before them; a SIGKILL can lose the lines of the last `GATHER_SECS` (docs/security.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Final

import orjson

__all__ = ["AuditLog"]

log = logging.getLogger("zeroclaw.audit")

GATHER_SECS: Final = 0.01


class AuditLog:
    def __init__(self, path: Path | None) -> None:
        self._queue: SimpleQueue[bytes | threading.Event | None] | None = None
        self._writer: threading.Thread | None = None
        if path is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
            fd = os.open(path, flags, 0o600)
            self._queue = SimpleQueue()
            self._writer = threading.Thread(target=self._write_lines, args=(fd,), name="zeroclaw-audit", daemon=True)
            self._writer.start()

    def record(self, event: str, peer: str, principal: str | None) -> None:
        if self._queue is not None:
            entry = {"time": datetime.now(UTC).isoformat(), "event": event, "peer": peer, "principal": principal}
            self._queue.put(orjson.dumps(entry) + b"\n")
        log.info("%s peer=%s principal=%s", event, peer, principal)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every line recorded so far is written (False if `timeout` passed first)."""
        if self._queue is None:
            return True
        written = threading.Event()
        self._queue.put(written)
        return written.wait(timeout)

    def close(self) -> None:
        """Write what is queued, then close the file."""
        queue, writer, self._queue, self._writer = self._queue, self._writer, None, None
        if queue is not None and writer is not None:
            queue.put(None)
            writer.join()

    def _write_lines(self, fd: int) -> None:
        queue = self._queue
        assert queue is not None
        writer = _Writer(fd)
        try:
            while True:
                items = [queue.get()]
                time.sleep(GATHER_SECS)
                with contextlib.suppress(Empty):
                    while True:
                        items.append(queue.get_nowait())
                lines: list[bytes] = []
                for item in items:
                    if isinstance(item, bytes):
                        lines.append(item)
                        continue
                    writer.write(b"".join(lines))  # what came before a flush or the close
                    lines.clear()
                    if item is None:
                        return
                    item.set()
                writer.write(b"".join(lines))
        finally:
            os.close(fd)


class _Writer:
    """Appends to the audit file; a full disk loses the lines, never the daemon, and is said once per failing run."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.failing = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        try:
            view = memoryview(data)
            while view:  # a short write (the disk filling up) leaves the rest to the next call, which says why
                view = view[os.write(self.fd, view) :]
            self.failing = False
        except OSError as exc:
            if not self.failing:
                log.error("could not write the audit log: %s", exc.strerror or type(exc).__name__)
            self.failing = True
