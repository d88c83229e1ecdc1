"""The audit log (R-SEC-3): one JSON line per connect, initialize, denied and disconnect.

Lines carry who and when, never what: no frame contents, tokens or secrets (R-SEC-6).

A line is made on the event loop and written by one writer thread, in order. A file write can block for
milliseconds when the disk is busy, and on the loop that was a wait for every call in flight (found by
benchmarks/soak.py: the audit write was the loop's most frequent long stall under connect churn). `close()` writes
every line queued before it returns; a SIGKILL can lose only lines queued in the last instant (docs/security.md).
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from queue import SimpleQueue

import orjson

__all__ = ["AuditLog"]

log = logging.getLogger("zeroclaw.audit")


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
        failing = False
        try:
            while (item := queue.get()) is not None:
                if isinstance(item, threading.Event):
                    item.set()
                    continue
                try:
                    os.write(fd, item)
                    failing = False
                except OSError as exc:  # a full disk loses the line, never the daemon; said once per failing run
                    if not failing:
                        log.error("could not write the audit log: %s", exc.strerror or type(exc).__name__)
                    failing = True
        finally:
            os.close(fd)
