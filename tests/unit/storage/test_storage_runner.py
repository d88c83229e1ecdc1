"""The SQLite runner of `Database`: one writer thread committing per unit, reader threads beside it (WAL).

R-ACP-4 rests on this: a unit that returned is committed (another connection sees it), one that raised left
nothing behind, and close() lets a write that was already submitted finish instead of cutting it short.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import ResourceClosedError
from sqlalchemy.orm import Session

from app.storage import Database, default_url
from app.storage.engine import sqlite_path
from app.storage.migrate import upgrade
from app.storage.models import PairingToken


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    url = default_url(tmp_path)
    await asyncio.to_thread(upgrade, url)
    database = await Database.open(url)
    yield database
    await database.close()


def _add(session: Session, n: int) -> str:
    token_id = f"tok_{n:012x}"
    session.add(
        PairingToken(token_id=token_id, user="u", label=None, token_sha256=f"{n:064x}", created_at=datetime.now(UTC))
    )
    session.flush()
    return threading.current_thread().name


def _committed(db: Database) -> set[str]:
    """What a separate connection sees: only committed rows."""
    path = sqlite_path(str(db.engine.url))
    assert path is not None
    with contextlib.closing(sqlite3.connect(path)) as con:
        return {row[0] for row in con.execute("SELECT token_id FROM pairing_tokens")}


def _count(session: Session) -> int:
    return session.execute(sa.select(sa.func.count()).select_from(PairingToken)).scalar_one()


async def test_sqlite_urls_get_the_thread_runner_with_its_pragmas(db: Database) -> None:
    assert db.dialect == "sqlite"
    assert db.engine.url.drivername == "sqlite+pysqlite"  # `sqlite+aiosqlite` in the config means the same file
    assert await db.read(lambda s: s.execute(sa.text("PRAGMA journal_mode")).scalar()) == "wal"
    assert await db.write(lambda s: s.execute(sa.text("PRAGMA foreign_keys")).scalar()) == 1


@pytest.mark.req("R-ACP-4")
async def test_each_write_is_committed_when_it_returns_and_all_run_on_one_thread(db: Database) -> None:
    threads = set()
    for n in range(5):
        threads.add(await db.write(_add, n))
        assert f"tok_{n:012x}" in _committed(db)  # visible to another connection at once
    assert len(threads) == 1 and threads.pop().startswith("zeroclaw-db-write")


async def test_writes_from_many_tasks_run_one_at_a_time_in_submission_order(db: Database) -> None:
    order: list[int] = []
    inside = 0
    peak = 0

    def unit(session: Session, n: int) -> None:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        _add(session, n)
        time.sleep(0.001)
        order.append(n)
        inside -= 1

    await asyncio.gather(*(db.write(unit, n) for n in range(50)))
    assert peak == 1
    assert order == list(range(50))  # gather submits in order; one writer thread keeps it
    assert await db.read(_count) == 50


async def test_a_failing_unit_rolls_back_all_of_it(db: Database) -> None:
    def unit(session: Session) -> None:
        _add(session, 1)
        _add(session, 2)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await db.write(unit)
    assert _committed(db) == set()
    await db.write(_add, 3)  # the writer is still usable
    assert _committed(db) == {"tok_000000000003"}


async def test_a_read_is_not_queued_behind_a_running_write(db: Database) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_write(session: Session) -> None:
        _add(session, 7)
        started.set()
        assert release.wait(10)

    write = asyncio.ensure_future(db.write(slow_write))
    assert await asyncio.to_thread(started.wait, 10)
    # WAL: the reader runs on its own thread and sees the last committed state, while the write is open.
    assert await asyncio.wait_for(db.read(_count), 5) == 0
    release.set()
    await write
    assert await db.read(_count) == 1


async def test_reads_run_concurrently_with_each_other(db: Database) -> None:
    barrier = threading.Barrier(3, timeout=10)

    def meet(_: Session) -> str:
        barrier.wait()  # only returns once three readers are inside at the same time
        return threading.current_thread().name

    names = await asyncio.gather(*(db.read(meet) for _ in range(3)))
    assert len(set(names)) == 3


async def test_close_waits_for_a_write_in_flight_and_then_refuses_new_units(tmp_path: Path) -> None:
    url = default_url(tmp_path)
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    started = threading.Event()

    def slow_write(session: Session) -> None:
        started.set()
        time.sleep(0.2)
        _add(session, 9)

    write = asyncio.ensure_future(db.write(slow_write))
    queued = asyncio.ensure_future(db.write(_add, 10))  # submitted before close: it commits too
    assert await asyncio.to_thread(started.wait, 10)
    await db.close()
    assert write.done() and queued.done()
    await write
    await queued
    assert _committed(db) == {"tok_000000000009", "tok_00000000000a"}
    with pytest.raises(ResourceClosedError):
        await db.write(_add, 11)
    with pytest.raises(ResourceClosedError):
        await db.read(_count)
    await db.close()  # idempotent


async def test_a_cancelled_caller_does_not_cut_a_started_unit_short(db: Database) -> None:
    started, release = threading.Event(), threading.Event()

    def unit(session: Session) -> None:
        _add(session, 12)
        started.set()
        assert release.wait(10)

    write = asyncio.ensure_future(db.write(unit))
    assert await asyncio.to_thread(started.wait, 10)
    write.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await write
    await db.write(lambda _s: None)  # the writer's queue is FIFO: the cancelled caller's unit has finished
    assert _committed(db) == {"tok_00000000000c"}  # whole: committed, never half-done


async def test_many_tasks_mixing_reads_and_writes(db: Database) -> None:
    async def worker(n: int) -> None:
        await db.write(_add, n)
        assert await db.read(lambda s: s.get(PairingToken, f"tok_{n:012x}")) is not None  # read-your-write

    await asyncio.gather(*(worker(n) for n in range(200)))
    assert await db.read(_count) == 200


async def test_in_memory_sqlite_is_one_database_for_reads_and_writes() -> None:
    db = await Database.open("sqlite+aiosqlite://")
    try:
        await db.write(lambda s: s.execute(sa.text("CREATE TABLE t (x INTEGER)")))
        await db.write(lambda s: s.execute(sa.text("INSERT INTO t VALUES (1)")))
        assert await db.read(lambda s: s.execute(sa.text("SELECT count(*) FROM t")).scalar()) == 1
    finally:
        await db.close()
