"""Which failures mean "the database cannot be used right now" (R-STORE-3), and how start-up names them.

    unavailable_reason(exc)   disk_full | read_only | locked | io_error | corrupt | unreachable | None
    is_storage_unavailable    unavailable_reason(exc) is not None
    masked_url(url)           the URL with its password as `***` (for messages and logs)
    open_failure(exc, url)    a short phrase for the one-line start-up refusal

The answer is read from the driver's own error code, never from message text: SQLite's extended result code
(`sqlite3.Error.sqlite_errorcode`, Python 3.11+) and PostgreSQL's SQLSTATE (`sqlstate`/`pgcode`). A storage
fault injected by `app.storage.faults` is not one of these: it stays an ordinary internal error.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from sqlalchemy.exc import DBAPIError

__all__ = ["is_storage_unavailable", "masked_url", "open_failure", "unavailable_reason"]

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_REASONS = {
    5: "locked",  # SQLITE_BUSY
    6: "locked",  # SQLITE_LOCKED
    8: "read_only",  # SQLITE_READONLY
    10: "io_error",  # SQLITE_IOERR
    11: "corrupt",  # SQLITE_CORRUPT
    13: "disk_full",  # SQLITE_FULL
    14: "unreachable",  # SQLITE_CANTOPEN
    15: "locked",  # SQLITE_PROTOCOL (a WAL lock race that did not settle)
    22: "disk_full",  # SQLITE_NOLFS
    26: "corrupt",  # SQLITE_NOTADB
}

# PostgreSQL SQLSTATEs: exact codes first, then their class (first two characters).
_PG_CODES = {
    "53100": "disk_full",
    "25006": "read_only",  # read_only_sql_transaction (a hot standby, default_transaction_read_only)
    "55P03": "locked",  # lock_not_available
    "57P01": "unreachable",  # admin_shutdown
    "57P02": "unreachable",  # crash_shutdown
    "57P03": "unreachable",  # cannot_connect_now
}
_PG_CLASSES = {"08": "unreachable", "53": "unreachable", "58": "io_error"}
_PG_DRIVERS = ("asyncpg", "psycopg")
# Start-up only: SQLSTATEs that are the operator's to fix rather than a storage fault.
_PG_OPEN_PHRASES = {
    "28000": "authentication failed",
    "28P01": "authentication failed",
    "3D000": "the database does not exist",
}

_PHRASES = {
    "disk_full": "the disk is full",
    "read_only": "the database is read-only",
    "locked": "the database is locked by another process",
    "io_error": "disk I/O error",
    "corrupt": "the file is not a usable database",
    "unreachable": "the database cannot be opened or reached",
}


def unavailable_reason(exc: BaseException) -> str | None:
    """Why storage is unavailable, if `exc` (or an exception it was raised from) says so; else None."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 8:
        reason = _reason_of(current)
        if reason is not None:
            return reason
        current, seen = current.__cause__, seen + 1
    return None


def is_storage_unavailable(exc: BaseException) -> bool:
    return unavailable_reason(exc) is not None


def _dbapi_error(exc: BaseException | None) -> DBAPIError | None:
    """`exc` if it is SQLAlchemy's `DBAPIError`. Asked without importing SQLAlchemy: an exception can only be one
    once SQLAlchemy is loaded, and a daemon on its fast start has not loaded it (`app.storage.deferred`)."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is not None and isinstance(exc, sa_exc.DBAPIError):
        return cast("DBAPIError", exc)
    return None


def _reason_of(exc: BaseException) -> str | None:
    dbapi = _dbapi_error(exc)
    if dbapi is not None:
        orig: BaseException | None = dbapi.orig
    elif isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith(_PG_DRIVERS):
        orig = exc  # a driver error SQLAlchemy did not wrap (asyncpg's on connect, `sqlite3` used directly)
    else:
        return None
    if isinstance(orig, sqlite3.Error):
        code = getattr(orig, "sqlite_errorcode", None)
        if isinstance(code, int):
            return _SQLITE_REASONS.get(code & 0xFF)
    sqlstate = _sqlstate(orig)
    if sqlstate is not None:
        return _PG_CODES.get(sqlstate) or _PG_CLASSES.get(sqlstate[:2])
    if dbapi is not None and dbapi.connection_invalidated:
        return "unreachable"
    return None


def _sqlstate(exc: BaseException | None) -> str | None:
    sqlstate = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return sqlstate if isinstance(sqlstate, str) and len(sqlstate) == 5 else None


def masked_url(url: str) -> str:
    """`url` with the password replaced by `***`; a string that is not a URL is not echoed at all."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a valid database URL)"


def open_failure(exc: BaseException, url: str | None = None) -> str:
    """A short phrase (no newline, no secret) for why the database at `url` could not be opened or upgraded."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    path = _sqlite_file(url)
    if path is not None and path.is_dir():  # SQLite itself only says "disk I/O error" or "unable to open"
        return "the path is a directory"
    reason = unavailable_reason(exc)
    if reason is not None:
        return _PHRASES[reason]
    if isinstance(exc, ModuleNotFoundError):
        return f"its driver is not installed ({exc.name or 'unknown module'})"
    if isinstance(exc, NoSuchModuleError | ArgumentError):
        return "the URL names no known database driver or is malformed"
    if isinstance(exc, TimeoutError):
        return "timed out connecting"
    if isinstance(exc, OSError):  # errno's own text: strerror may carry an address or a path
        detail = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        return detail[:1].lower() + detail[1:]
    dbapi = _dbapi_error(exc)
    orig = dbapi.orig if dbapi is not None else exc
    phrase = _PG_OPEN_PHRASES.get(_sqlstate(orig) or "")
    if phrase is not None:
        return phrase
    if dbapi is not None and dbapi.orig is not None:
        return f"{type(dbapi.orig).__name__} from the database driver"
    return type(exc).__name__


def _sqlite_file(url: str | None) -> Path | None:
    from sqlalchemy.exc import ArgumentError

    from app.storage.engine import sqlite_path

    try:
        return None if url is None else sqlite_path(url)
    except ArgumentError:
        return None
