"""The audit log (R-SEC-3): one JSON line per connect, initialize, denied and disconnect.

Lines carry who and when, never what: no frame contents, tokens or secrets (R-SEC-6).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import orjson

__all__ = ["AuditLog"]

log = logging.getLogger("zeroclaw.audit")


class AuditLog:
    def __init__(self, path: Path | None) -> None:
        self._file: IO[bytes] | None = None
        if path is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
            fd = os.open(path, flags, 0o600)
            self._file = os.fdopen(fd, "ab", buffering=0)

    def record(self, event: str, peer: str, principal: str | None) -> None:
        entry = {"time": datetime.now(UTC).isoformat(), "event": event, "peer": peer, "principal": principal}
        if self._file is not None:
            self._file.write(orjson.dumps(entry) + b"\n")
        log.info("%s peer=%s principal=%s", event, peer, principal)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
