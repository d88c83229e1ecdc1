"""The `Database` facade: whole units of work, one writer at a time, readers alongside.

A unit of work is a plain function `unit(session, *args) -> value` over a sync SQLAlchemy `Session`; callers run it
with `await db.write(unit, *args)` (one transaction: committed when the call returns, rolled back if the unit
raises) or `await db.read(unit, *args)` (anything it changes is discarded). The unit, not each statement, is what
crosses to a thread, which is what makes the storage path cheap (docs/sessions-storage.md, "The runner"):

* SQLite (any `sqlite…` URL, `sqlite+aiosqlite` included): a sync engine on the stdlib `sqlite3` driver with the
  same pragmas and 0600 file as `app.storage.engine`; writes run on ONE writer thread, in submission order, and
  commit per unit; reads run on a small pool of reader threads, which WAL lets proceed while the writer writes.
* Any other URL (`postgresql+asyncpg://…`): the async engine, each unit inside `AsyncSession.run_sync`, writes
  serialized by an asyncio.Lock as before.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar

from sqlalchemy import URL, Connection, Engine, event, make_url
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.exc import ResourceClosedError
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from app.self_metrics import Observations, Timings
from app.storage.engine import _secure_file, _sqlite_pragmas, create_engine, sqlite_path
from app.storage.worker_threads import WorkerThreads

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["READER_THREADS", "Database"]

P = ParamSpec("P")
T = TypeVar("T")

# WAL readers never wait for the writer; more threads would add connections, not speed (the GIL).
READER_THREADS: Final = 4
# How long the checkpointer lets writes gather before it checkpoints them (`_Checkpointer`): at most one
# checkpoint, so one pair of fsyncs, per this many seconds of writing.
CHECKPOINT_AFTER_S: Final = 0.5

log = logging.getLogger("zeroclaw.storage")


class Database:
    """Runs units of work. Writes are serialized and each commits on its own: one unit, one transaction.

    SQLite has a single writer per file anyway; queueing writers here instead of in SQLite's busy handler keeps
    waiting cheap and fair, and never surfaces `database is locked` from inside the daemon.
    """

    def __init__(self, runner: _ThreadRunner | _AsyncRunner, timings: dict[str, Timings] | None = None) -> None:
        self._runner = runner
        # How long each unit took, queueing included (`zeroclaw_storage_operation_seconds`, rpc/methods/metrics.py).
        timings = timings if timings is not None else Observations().storage
        self._read_timings, self._write_timings = timings["read"], timings["write"]

    @classmethod
    async def open(
        cls, url: str | URL, *, readers: int = READER_THREADS, timings: dict[str, Timings] | None = None
    ) -> Database:
        """Open and connect once, so a bad URL or an unreadable file fails at start, not at the first request.
        `timings` (an `Observations.storage`) gets the duration of every unit by kind."""
        parsed = make_url(url)
        runner: _ThreadRunner | _AsyncRunner
        if parsed.get_backend_name() == "sqlite":
            runner = await asyncio.to_thread(_ThreadRunner.open, parsed, readers)
        else:
            runner = await _AsyncRunner.open(parsed)
        return cls(runner, timings)

    @property
    def engine(self) -> Engine | AsyncEngine:
        """The SQLite sync engine, or the async engine of any other backend."""
        return self._runner.engine

    @property
    def dialect(self) -> str:
        return self._runner.engine.dialect.name

    async def write(self, unit: Callable[Concatenate[Session, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `unit` in a transaction of its own, after every write submitted before it; commit, or roll back if
        it raises. Once this returns, the unit's changes are committed (R-ACP-4). A caller cancelled meanwhile
        does not stop a unit that already started: it still commits or rolls back as a whole."""
        start = time.perf_counter()
        try:
            return await self._runner.write(partial(unit, **kwargs), *args)
        finally:
            self._write_timings.observe(time.perf_counter() - start)

    async def read(self, unit: Callable[Concatenate[Session, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `unit` for its result; whatever it changed is rolled back. Does not wait for queued writes."""
        start = time.perf_counter()
        try:
            return await self._runner.read(partial(unit, **kwargs), *args)
        finally:
            self._read_timings.observe(time.perf_counter() - start)

    async def close(self) -> None:
        """Refuse new units, let every write already submitted commit, then release the connections."""
        await self._runner.close()


class _ThreadRunner:
    """SQLite: one writer thread, a few reader threads, one sync engine."""

    def __init__(self, engine: Engine, readers: int) -> None:
        self.engine = engine
        self._writer = WorkerThreads(1, "zeroclaw-db-write")
        self._readers = WorkerThreads(readers, "zeroclaw-db-read") if readers else None
        # A connection per thread for its lifetime: cheaper than a pool checkout per unit
        # (docs/sessions-storage.md, "The runner").
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        # A file database's WAL is checkpointed on a thread of its own, never in a writer's commit.
        self._checkpointer = _Checkpointer(engine) if sqlite_path(engine.url) is not None else None

    @classmethod
    def open(cls, url: URL, readers: int) -> _ThreadRunner:
        path = sqlite_path(url)
        if path is not None:
            _secure_file(path)
        sync_url = url.set(drivername="sqlite+pysqlite")
        if path is None:
            # In-memory (or a URI the caller configured): every connection would be its own database, so one
            # connection serves all, and reads queue with the writes on its thread.
            engine = create_sync_engine(sync_url, poolclass=StaticPool, connect_args={"check_same_thread": False})
            readers = 0
        else:
            # A connection per thread (and the checkpointer's); `check_same_thread` off so that `dispose()` may
            # close them here.
            engine = create_sync_engine(
                sync_url, pool_size=readers + 2, max_overflow=0, connect_args={"check_same_thread": False}
            )
            event.listen(engine, "connect", _no_autocheckpoint)
        event.listen(engine, "connect", partial(_sqlite_pragmas, foreign_keys=True))
        try:
            with engine.connect():
                pass
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, readers)

    def _connection(self) -> Connection:
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is None or connection.closed or connection.invalidated:
            connection = self._local.connection = self.engine.connect()
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    def _run_write(self, unit: Callable[..., T], *args: object) -> T:
        # Rows stay readable after commit: units may hand them back once the session is gone.
        with Session(self._connection(), expire_on_commit=False) as session, session.begin():
            result = unit(session, *args)
        if self._checkpointer is not None:
            self._checkpointer.wrote()
        return result

    def _run_read(self, unit: Callable[..., T], *args: object) -> T:
        with Session(self._connection(), expire_on_commit=False) as session:  # closing rolls back what is left
            return unit(session, *args)

    async def write(self, unit: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise ResourceClosedError("the database is closed")
        return await self._writer.run(self._run_write, unit, *args)

    async def read(self, unit: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise ResourceClosedError("the database is closed")
        return await (self._readers or self._writer).run(self._run_read, unit, *args)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Shutdown flushes, it does not cut a transaction short: the threads finish what was submitted.
        await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        self._writer.stop()
        if self._readers is not None:
            self._readers.stop()
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with self._connections_lock:  # every thread is done: their connections may be closed from here
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self.engine.dispose()


def _no_autocheckpoint(dbapi_connection: Any, _record: Any) -> None:
    """The runner's connections never checkpoint the WAL in a commit: `_Checkpointer` does, beside them."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.fetchall()  # this pragma answers with the value in force
    finally:
        cursor.close()


class _Checkpointer:
    """Checkpoints a file database's WAL on a thread of its own, `CHECKPOINT_AFTER_S` after writes began to gather.

    SQLite's own automatic checkpoint runs inside the commit that takes the WAL past 1,000 pages, and with
    `synchronous=NORMAL` a checkpoint syncs the WAL and the database file: the caller of that write waited for both
    (~20 ms on this machine, half the time of a 10,000-row `session/fork`, R-BRANCH-6; docs/sessions.md,
    "Branching"). A PASSIVE checkpoint here copies what it can without waiting for readers or the writer, which go
    on meanwhile (WAL allows it); a commit stays durable in the WAL either way, so this changes when the database
    file catches up, never what survives a crash. What is left at close is checkpointed by SQLite when the last
    connection closes.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._wrote = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="zeroclaw-db-checkpoint", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """A write committed: checkpoint soon."""
        self._wrote.set()

    def stop(self) -> None:
        """At once: what is left is checkpointed as the last connection closes."""
        self._stopping.set()
        self._wrote.set()
        self._thread.join()

    def _serve(self) -> None:
        connection: Any = None
        try:
            while True:
                self._wrote.wait()
                # gather a burst of writes into one checkpoint
                if self._stopping.is_set() or self._stopping.wait(CHECKPOINT_AFTER_S):
                    return
                self._wrote.clear()
                try:
                    if connection is None:
                        connection = self._engine.raw_connection()
                    connection.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except Exception:  # the next write tries again; SQLite checkpoints at close anyway
                    log.debug("WAL checkpoint failed", exc_info=True)
        finally:
            if connection is not None:
                connection.close()


class _AsyncRunner:
    """Any async URL: the async engine; a unit runs in `AsyncSession.run_sync`, writes one at a time."""

    def __init__(self, engine: AsyncEngine) -> None:
        from sqlalchemy.ext.asyncio import async_sessionmaker

        self.engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._write_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, url: URL) -> _AsyncRunner:
        engine = create_engine(url)
        try:
            async with engine.connect():
                pass
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine)

    async def write(self, unit: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise ResourceClosedError("the database is closed")
        # Its own task, shielded: a cancelled caller leaves the unit to commit or roll back whole
        # (as on SQLite), never cut short.
        task = asyncio.ensure_future(self._write(unit, *args))
        task.add_done_callback(_retrieve)
        return await asyncio.shield(task)

    async def _write(self, unit: Callable[..., T], *args: object) -> T:
        async with self._write_lock, self._sessions() as session, session.begin():
            return await session.run_sync(unit, *args)

    async def read(self, unit: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise ResourceClosedError("the database is closed")
        async with self._sessions() as session:
            return await session.run_sync(unit, *args)

    async def close(self) -> None:
        self._closed = True
        # Let an in-flight write commit first: shutdown flushes, it does not cut a transaction short.
        async with self._write_lock:
            await self.engine.dispose()


def _retrieve(task: asyncio.Task[Any]) -> None:
    """A shielded write whose caller is gone still fails somewhere: mark its exception seen (the caller, if any,
    got it too), so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
