"""Engine construction: the default URL, SQLite pragmas and the database file's mode."""

from __future__ import annotations

import os
import stat
from functools import partial
from pathlib import Path

from sqlalchemy import URL, event, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

__all__ = ["BUSY_TIMEOUT_MS", "DB_FILENAME", "create_engine", "default_url", "driver_problem", "sqlite_path"]

DB_FILENAME = "zeroclaw.db"
# Our own writes are serialized: this is for another process (`db upgrade`) holding the lock.
BUSY_TIMEOUT_MS = 5000
_FILE_MODE = 0o600


def default_url(data_dir: Path) -> str:
    # URL.create escapes `?`/`#` in the path, which a hand-built f-string would not.
    url = URL.create("sqlite+aiosqlite", database=str(Path(data_dir).absolute() / DB_FILENAME))
    return url.render_as_string(hide_password=False)


# Each backend's async driver (`postgresql://` alone means psycopg), and how to get it.
_ASYNC_DRIVERS = {"postgresql": "asyncpg", "sqlite": "aiosqlite"}
_INSTALL = {"asyncpg": " (`pip install 'zeroclaw[postgres]'` installs it)"}


def driver_problem(url: str | URL) -> str | None:
    """Why `url` names a driver the daemon cannot use, with the URL to write instead (password masked); None when
    it can, or when the URL is not one SQLAlchemy parses (opening it then says why)."""
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    backend = parsed.get_backend_name()
    driver = _ASYNC_DRIVERS.get(backend)
    if driver is None or parsed.get_driver_name() == driver:
        return None
    fixed = parsed.set(drivername=f"{backend}+{driver}").render_as_string(hide_password=True)
    return f"the URL must name the {driver} driver: write {fixed}{_INSTALL.get(driver, '')}"


def sqlite_path(url: str | URL) -> Path | None:
    """The file behind a SQLite URL, or None for other backends and in-memory databases."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:") or parsed.query.get("mode") == "memory":
        return None  # URI filenames: the caller chose the file and its options
    return Path(database)


def create_engine(url: str | URL, *, foreign_keys: bool = True) -> AsyncEngine:
    """An async engine for any SQLAlchemy async URL; SQLite gets WAL and its pragmas on every connection.

    `foreign_keys=False` is for migrations only: SQLite's table-rebuild ALTER (Alembic batch mode) drops and
    recreates tables, which with enforcement on would cascade or fail on referencing rows.
    """
    path = sqlite_path(url)
    if path is not None:
        _secure_file(path)
    engine = create_async_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", partial(_sqlite_pragmas, foreign_keys=foreign_keys))
    return engine


def _sqlite_pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry, *, foreign_keys: bool) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        # SQLite enforces foreign keys per connection and only when asked.
        cursor.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
        # Safe with WAL: a power loss may lose the last commits, never corrupt the file.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS:d}")
    finally:
        cursor.close()


def _secure_file(path: Path) -> None:
    # SQLite would create the file with the umask's mode (often 0644); its -wal/-shm files copy the main
    # file's mode, so creating the main file 0600 first keeps all three private.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
    os.close(fd)
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = stat.S_IMODE(candidate.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:  # a file left by an older build or a copy: tighten, never loosen
            candidate.chmod(_FILE_MODE)
