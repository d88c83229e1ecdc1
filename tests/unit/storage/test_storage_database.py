"""The Database facade and engine setup: SQLite pragmas, file mode, one writer, commit/rollback.

The `db` fixture is on the backend under test (SQLite, or PostgreSQL in the CI pass); the SQLite-only checks
(pragmas, file modes) open their own SQLite file.
"""

from __future__ import annotations

import asyncio
import stat
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import make_url
from sqlalchemy.orm import Session
from waiting import until

from app.storage import Database, default_url, iso_z
from app.storage.engine import BUSY_TIMEOUT_MS, sqlite_path
from app.storage.migrate import upgrade
from app.storage.models import PairingToken
from app.storage.types import UTCDateTime


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


async def _open_migrated(url: str) -> Database:
    # The daemon runs the (sync) upgrade in a thread; so do the tests, inside a running loop.
    await asyncio.to_thread(upgrade, url)
    return await Database.open(url)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """On the backend under test (tests/db_backend.py)."""
    database = await _open_migrated(database_url)
    yield database
    await database.close()


@pytest.fixture
async def sqlite_db(data_dir: Path) -> AsyncIterator[Database]:
    database = await _open_migrated(default_url(data_dir))
    yield database
    await database.close()


def _row(token_id: str) -> PairingToken:
    return PairingToken(
        token_id=token_id,
        user="alice",
        label=None,
        token_sha256=token_id.ljust(64, "0"),
        created_at=datetime.now(UTC),
    )


async def _pragma(db: Database, name: str) -> object:
    return await db.read(lambda session: session.execute(sa.text(f"PRAGMA {name}")).scalar())


# R-PATH-2: each data dir has its own database, at <data_dir>/zeroclaw.db.
@pytest.mark.req("R-PATH-2")
def test_default_url_points_into_the_data_dir(data_dir: Path) -> None:
    url = default_url(data_dir)
    assert url == f"sqlite+aiosqlite:///{data_dir}/zeroclaw.db"
    assert sqlite_path(url) == data_dir / "zeroclaw.db"


def test_default_url_round_trips_awkward_paths(tmp_path: Path) -> None:
    odd = tmp_path / "my data?#x"
    assert make_url(default_url(odd)).database == str(odd / "zeroclaw.db")


def test_sqlite_path_ignores_other_backends_and_memory() -> None:
    assert sqlite_path("postgresql+asyncpg://u:p@localhost/zc") is None
    assert sqlite_path("sqlite+aiosqlite://") is None
    assert sqlite_path("sqlite+aiosqlite:///:memory:") is None


async def test_every_connection_gets_wal_foreign_keys_and_busy_timeout(sqlite_db: Database) -> None:
    db = sqlite_db
    assert await _pragma(db, "journal_mode") == "wal"
    assert await _pragma(db, "foreign_keys") == 1
    assert await _pragma(db, "synchronous") == 1  # NORMAL
    assert await _pragma(db, "busy_timeout") == BUSY_TIMEOUT_MS
    assert await db.write(lambda session: session.execute(sa.text("PRAGMA foreign_keys")).scalar()) == 1


@pytest.mark.req("R-BRANCH-6")
async def test_the_wal_is_checkpointed_beside_the_writer_never_in_its_commit(
    sqlite_db: Database, data_dir: Path
) -> None:
    """A commit never waits for a checkpoint (`wal_autocheckpoint=0` on every runner connection); the runner's own
    thread copies the WAL into the database file soon after writes, while the writer goes on."""
    db = sqlite_db
    assert await db.write(lambda session: session.execute(sa.text("PRAGMA wal_autocheckpoint")).scalar()) == 0
    assert await _pragma(db, "wal_autocheckpoint") == 0
    main_file = data_dir / "zeroclaw.db"
    before = main_file.stat().st_size

    def fill(session: Session) -> None:
        session.execute(sa.text("CREATE TABLE filler (x TEXT)"))
        session.execute(sa.text("INSERT INTO filler VALUES (:x)"), [{"x": "x" * 1000} for _ in range(2000)])

    await db.write(fill)  # committed to the WAL
    await until(lambda: main_file.stat().st_size > before + 1_000_000, what="the checkpoint into the database file")
    assert await db.read(lambda session: session.execute(sa.text("SELECT count(*) FROM filler")).scalar()) == 2000


# R-SEC-1 (spirit): the database file is created 0600 and never exists wider.
@pytest.mark.req("R-SEC-1")
async def test_open_creates_the_file_0600(data_dir: Path) -> None:
    database = await Database.open(default_url(data_dir))
    try:
        await database.write(lambda session: session.execute(sa.text("CREATE TABLE t (x INTEGER)")))
        for name in ("zeroclaw.db", "zeroclaw.db-wal", "zeroclaw.db-shm"):
            path = data_dir / name
            if path.exists():
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    finally:
        await database.close()
    assert (data_dir / "zeroclaw.db").exists()


async def test_open_tightens_a_loose_existing_file(data_dir: Path) -> None:
    path = data_dir / "zeroclaw.db"
    path.touch(mode=0o644)
    path.chmod(0o644)
    database = await Database.open(default_url(data_dir))
    await database.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_write_commits_and_read_sees_it(db: Database) -> None:
    await db.write(lambda session: session.add(_row("tok_000000000001")))
    assert await db.read(lambda session: session.get(PairingToken, "tok_000000000001")) is not None


async def test_write_rolls_back_on_error(db: Database) -> None:
    def unit(session: Session) -> None:
        session.add(_row("tok_000000000002"))
        session.flush()
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await db.write(unit)
    assert await db.read(lambda session: session.get(PairingToken, "tok_000000000002")) is None


async def test_writes_are_serialized(db: Database) -> None:
    inside = 0
    peak = 0

    def unit(session: Session, n: int) -> None:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        session.add(_row(f"tok_{n:012x}"))
        session.flush()
        time.sleep(0.01)  # give another writer the chance to barge in
        inside -= 1

    await asyncio.gather(*(db.write(unit, n) for n in range(5)))
    assert peak == 1
    count = sa.select(sa.func.count()).select_from(PairingToken)
    assert await db.read(lambda session: session.execute(count).scalar()) == 5


@pytest.mark.req("R-ACP-4")
async def test_a_cancelled_caller_leaves_its_started_write_to_commit_on_every_backend(db: Database) -> None:
    """What was submitted commits or rolls back as a whole, whoever stopped waiting: the SQLite writer thread runs
    a started unit to its end, and the PostgreSQL runner shields its transaction from the caller's cancellation."""
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow(session: Session) -> None:
        session.add(_row("tok_00000000c0de"))
        session.flush()
        loop.call_soon_threadsafe(started.set)
        if db.dialect == "sqlite":
            time.sleep(0.3)  # the writer thread
        else:
            session.execute(sa.text("SELECT pg_sleep(0.3)"))  # the loop: a server-side wait is what yields

    write = asyncio.ensure_future(db.write(slow))
    await asyncio.wait_for(started.wait(), 5)
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    await db.write(lambda _session: None)  # writes are serialized: the cancelled caller's unit is done
    found = await db.read(lambda session: session.get(PairingToken, "tok_00000000c0de"))
    assert found is not None, "the started write was cut short"


async def test_reads_run_while_a_write_is_open(sqlite_db: Database) -> None:
    # SQLite only: the async runner (PostgreSQL) runs a unit on the loop's thread, so nothing runs beside it.
    flushed, release = threading.Event(), threading.Event()

    def unit(session: Session) -> None:
        session.add(_row("tok_000000000003"))
        session.flush()
        flushed.set()
        assert release.wait(10)

    write = asyncio.ensure_future(sqlite_db.write(unit))
    assert await asyncio.to_thread(flushed.wait, 10)
    # WAL: a reader is not blocked by the open write and sees the last committed state.
    assert await sqlite_db.read(lambda session: session.get(PairingToken, "tok_000000000003")) is None
    release.set()
    await write
    assert await sqlite_db.read(lambda session: session.get(PairingToken, "tok_000000000003")) is not None


async def test_utc_column_round_trips_aware_utc(db: Database) -> None:
    moment = datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    row = _row("tok_000000000004")
    row.created_at = moment
    await db.write(lambda session: session.add(row))
    loaded = await db.read(lambda session: session.get(PairingToken, "tok_000000000004"))
    assert loaded is not None
    assert loaded.created_at == moment
    assert loaded.created_at.tzinfo is UTC


def test_utc_column_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="naive"):
        UTCDateTime().process_bind_param(datetime(2024, 1, 1), sa.create_engine("sqlite://").dialect)


def test_iso_z_renders_utc_with_z() -> None:
    moment = datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert iso_z(moment) == "2024-05-01T12:00:00.123Z"


def test_iso_z_writes_what_isoformat_writes() -> None:
    """The %-formatted rendering equals `isoformat(timespec="milliseconds")` with `Z` (truncated, zero-padded)."""
    zones = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-9, minutes=-30))]
    moments = [datetime(1, 1, 1, 12, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
    moments += [
        datetime(2026, 12, 1, 16, 33, 36, micro, tzinfo=zone) for micro in (0, 999, 1000, 999999) for zone in zones
    ]
    for moment in moments:
        expected = moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert iso_z(moment) == expected, moment
