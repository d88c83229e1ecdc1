"""One daemon per database (R-STORE-1, docs/operations.md): a lock held for the daemon's whole life.

The endpoint lock (`app.endpoint_lock`) keeps two daemons off one socket, but two config dirs, or two machines, can
name the same `[storage] url`; two daemons on one database would each recover the other's live turns as crashed and
interleave transcript indexes. So the daemon also locks the database itself, before it migrates or reads anything:

* PostgreSQL: a session-level `pg_try_advisory_lock` on a fixed key, on a dedicated connection that lives as long
  as the daemon. Advisory keys are per database, so daemons on different databases of one server never collide.
  The server drops the lock when that connection ends, a killed daemon included. The connection's
  `application_name` says which pid on which host holds it, so the refusal can name them.
* SQLite: `flock` on `<database file>.lock` beside the file (like the endpoint lock, pid inside). A `flock`, not
  SQLite's own `fcntl` locks, which belong to SQLite.
* Other backends and in-memory SQLite: no lock (nothing to share, or nothing known about how to lock it).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.endpoint_lock import AlreadyRunning, EndpointLock
from app.storage.errors import masked_url

if TYPE_CHECKING:  # SQLAlchemy is imported where a URL is parsed: `acquire_sqlite_file` must start without it
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["ADVISORY_KEY", "DatabaseInUse", "DatabaseLock", "acquire", "acquire_sqlite_file"]

# "zeroclaw" in ASCII, as a signed 64-bit advisory lock key: the same for every daemon.
ADVISORY_KEY = 0x7A65_726F_636C_6177
APPLICATION_PREFIX = "zeroclaw daemon"
# A daemon just killed may hold its server session a few ms more (the server sees EOF late): a
# restart waits this long before calling the database taken.
RETRY_SECS = 3.0
_RETRY_INTERVAL = 0.1


class DatabaseInUse(Exception):
    """Another daemon holds the database. `str()` is the one-line reason."""


class DatabaseLock(Protocol):
    async def release(self) -> None: ...


async def acquire(url: str, *, retry_secs: float = RETRY_SECS) -> DatabaseLock:
    """Lock the database at `url` for this process, or raise `DatabaseInUse` (or the driver's own error, e.g. an
    unreachable server: the caller words it like any other failure to open the database)."""
    from sqlalchemy import make_url

    from app.storage.engine import sqlite_path

    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        return await _PostgresLock.acquire(url, retry_secs)
    path = sqlite_path(parsed)
    if path is not None:
        return _FileLock.acquire(url, path)
    return _NoLock()


def acquire_sqlite_file(database: Path, url: Callable[[], str]) -> DatabaseLock:
    """`acquire` for a SQLite file the caller already knows (the daemon's default database), without parsing a URL.
    `url()` names the database in a refusal and is called only then: the daemon's fast start never imports
    SQLAlchemy (`app.storage.deferred`)."""
    return _FileLock.acquire(url, database)


class _NoLock:
    async def release(self) -> None:
        return None


class _FileLock:
    def __init__(self, lock: EndpointLock | None) -> None:
        self._lock = lock

    @classmethod
    def acquire(cls, url: str | Callable[[], str], database: Path) -> _FileLock:
        lock = EndpointLock(database.with_name(database.name + ".lock"))
        try:
            lock.acquire()
        except AlreadyRunning as exc:
            pid = exc.pid if exc.pid is not None else "unknown"
            named = url() if callable(url) else url
            raise DatabaseInUse(f"another daemon (pid {pid}) already uses the database {masked_url(named)}") from None
        except OSError:
            # No lock file (a missing or read-only directory): opening the database itself fails next, and says
            # precisely why; the lock must not replace that message with a vaguer one.
            return _FileLock(None)
        return cls(lock)

    async def release(self) -> None:
        if self._lock is not None:
            self._lock.release()


class _PostgresLock:
    def __init__(self, engine: AsyncEngine, connection: AsyncConnection) -> None:
        self._engine = engine
        self._connection = connection

    @classmethod
    async def acquire(cls, url: str, retry_secs: float) -> _PostgresLock:
        from sqlalchemy.ext.asyncio import create_async_engine
        from sqlalchemy.pool import NullPool

        me = f"{APPLICATION_PREFIX} pid {os.getpid()} on {socket.gethostname()}"[:63]  # the server's name limit
        # One connection of its own (NullPool: nothing else ever borrows it), named after this daemon.
        settings = {"server_settings": {"application_name": me}}
        engine = create_async_engine(url, poolclass=NullPool, connect_args=settings)
        try:
            connection = await engine.connect()
            try:
                deadline = time.monotonic() + retry_secs
                while not await _try_lock(connection):
                    if time.monotonic() >= deadline:
                        holder = await _holder(connection)
                        raise DatabaseInUse(f"another daemon ({holder}) already uses the database {masked_url(url)}")
                    await asyncio.sleep(_RETRY_INTERVAL)
            except BaseException:
                await connection.close()
                raise
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine, connection)

    async def release(self) -> None:
        try:
            await self._connection.close()  # ending the server session drops its advisory locks
        finally:
            await self._engine.dispose()


async def _try_lock(connection: AsyncConnection) -> bool:
    from sqlalchemy import text

    got = (await connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": ADVISORY_KEY})).scalar_one()
    await connection.commit()  # the lock is the session's, not the transaction's: it outlives this commit
    return bool(got)


async def _holder(connection: AsyncConnection) -> str:
    """'pid <n> on <host>' from the holder's application_name, when the server lets us see it."""
    from sqlalchemy import text

    key = ADVISORY_KEY & 0xFFFF_FFFF_FFFF_FFFF
    row = (
        await connection.execute(
            text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND l.classid = :high AND l.objid = :low AND l.objsubid = 1"
            ),
            {"high": key >> 32, "low": key & 0xFFFF_FFFF},
        )
    ).first()
    await connection.commit()
    name = row[0] if row is not None else ""
    if isinstance(name, str) and name.startswith(APPLICATION_PREFIX + " "):
        return name[len(APPLICATION_PREFIX) + 1 :]
    return "pid unknown"
