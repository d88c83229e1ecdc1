"""Real storage faults on the daemon's own SQLite connections, for tests: a full disk or a read-only database.

`app.storage.faults` fails a named store operation with an exception of our own; this module makes SQLite itself
refuse writes, so what a test sees is what a user with a full disk sees (R-STORE-3). Point the daemon at a file:

    ZEROCLAW_STORAGE_FAULT_FILE=/tmp/x/fault zeroclaw daemon

and write one word into that file at any time; every SQLite connection of the process reads it again at the start
of each transaction (the daemon installs the hook before it opens the database):

    full        `PRAGMA max_page_count` = the pages in use: a write that needs a new page fails with SQLITE_FULL
                ("database or disk is full"), exactly as on a full disk; one that fits in a page already
                allocated still succeeds, exactly as on a full disk
    read_only   `PRAGMA query_only`: every write fails with SQLITE_READONLY, as on a read-only file or mount
                (chmod is no test of that: root ignores file modes)
    (empty, missing file)   no fault: the limits are put back

A pragma holds per connection, which is why the fault must be set by the daemon on its own connections: a test
that opens the database file itself changes nothing for the daemon. Unset (the default), nothing is installed
and nothing is read. Other backends ignore the variable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, event

__all__ = ["ENV_VAR", "MODES", "FaultFile", "install_from_env", "uninstall"]

ENV_VAR = "ZEROCLAW_STORAGE_FAULT_FILE"
MODES = frozenset({"", "full", "read_only"})

log = logging.getLogger("zeroclaw.storage")

_APPLIED = "zeroclaw_fault_mode"  # keys in the pool record's `info`, which lives as long as the DBAPI connection
_DEFAULT_MAX_PAGES = "zeroclaw_default_max_pages"


class FaultFile:
    """The fault named in a file, applied to a connection when it changed since that connection last looked."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def mode(self) -> str:
        try:
            word = self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return ""
        if word not in MODES:
            raise ValueError(f"{ENV_VAR}: {self.path} holds {word!r}; expected one of full, read_only or nothing")
        return word

    def apply(self, dbapi_connection: Any, info: dict[Any, Any]) -> None:
        mode = self.mode()
        if info.get(_APPLIED, "") == mode:
            return
        cursor = dbapi_connection.cursor()
        try:
            if _DEFAULT_MAX_PAGES not in info:
                cursor.execute("PRAGMA max_page_count")
                info[_DEFAULT_MAX_PAGES] = int(cursor.fetchone()[0])
            limit = info[_DEFAULT_MAX_PAGES]
            if mode == "full":
                cursor.execute("PRAGMA page_count")
                limit = int(cursor.fetchone()[0])
            cursor.execute(f"PRAGMA max_page_count={limit:d}")
            cursor.fetchall()  # this pragma answers with the limit in force
            cursor.execute(f"PRAGMA query_only={'ON' if mode == 'read_only' else 'OFF'}")
        finally:
            cursor.close()
        info[_APPLIED] = mode

    def on_begin(self, conn: Connection) -> None:
        if conn.dialect.name == "sqlite":
            fairy = conn.connection
            self.apply(fairy.dbapi_connection, fairy.info)


_installed: FaultFile | None = None


def install_from_env(environ: Mapping[str, str] | None = None) -> FaultFile | None:
    """Watch the file named by `ZEROCLAW_STORAGE_FAULT_FILE`, if set, at the start of every transaction of every
    SQLite engine in this process (sync or async, however it was built); a no-op when unset. Idempotent."""
    global _installed
    path = (os.environ if environ is None else environ).get(ENV_VAR)
    if not path or _installed is not None:
        return _installed
    faults = FaultFile(path)
    event.listen(Engine, "begin", faults.on_begin)
    _installed = faults
    log.warning("storage fault injection is on: %s=%s (a test knob, never for production)", ENV_VAR, path)
    return faults


def uninstall() -> None:
    """Remove what `install_from_env` installed (for tests in one process)."""
    global _installed
    if _installed is not None:
        event.remove(Engine, "begin", _installed.on_begin)
        _installed = None
