"""Which failures are "storage unavailable", how start-up names them, and the fault file that makes them real
(R-STORE-3). The SQLite errors here are real ones, raised by SQLite itself through `PRAGMA max_page_count` and
`PRAGMA query_only` and a lock held by another connection; the PostgreSQL ones carry a SQLSTATE as asyncpg's do."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, OperationalError

from app.storage import driver_faults
from app.storage.driver_faults import ENV_VAR, FaultFile
from app.storage.errors import is_storage_unavailable, masked_url, open_failure, unavailable_reason
from app.storage.faults import StorageFault

pytestmark = pytest.mark.req("R-STORE-3")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = sa.create_engine(f"sqlite+pysqlite:///{tmp_path / 'db.sqlite'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x)")
    try:
        yield engine
    finally:
        engine.dispose()


def failing_write(conn: sa.Connection, size: int = 100_000) -> OperationalError:
    with pytest.raises(OperationalError) as caught:
        conn.exec_driver_sql("INSERT INTO t VALUES (?)", ("x" * size,))
    return caught.value


# ---------------------------------------------------------------------------------------------- classification


def test_a_full_database_is_disk_full(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
        conn.exec_driver_sql(f"PRAGMA max_page_count={pages}")
        exc = failing_write(conn)
    assert unavailable_reason(exc) == "disk_full" and is_storage_unavailable(exc)
    assert unavailable_reason(exc.orig) == "disk_full"  # the driver's own error, unwrapped, says the same


def test_a_read_only_connection_is_read_only(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA query_only=ON")
        exc = failing_write(conn, 1)
    assert unavailable_reason(exc) == "read_only"


def test_a_database_locked_by_another_connection_is_locked(engine: sa.Engine, tmp_path: Path) -> None:
    holder = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        busy = sa.create_engine(f"sqlite+pysqlite:///{tmp_path / 'db.sqlite'}", connect_args={"timeout": 0})
        with busy.connect() as conn:
            exc = failing_write(conn, 1)
        busy.dispose()
    finally:
        holder.close()
    assert unavailable_reason(exc) == "locked"


def test_a_wrapping_exception_is_followed_to_its_cause(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA query_only=ON")
        exc = failing_write(conn, 1)
    try:
        raise RuntimeError("the unit of work failed") from exc
    except RuntimeError as wrapper:
        assert unavailable_reason(wrapper) == "read_only"


def test_other_failures_are_not_storage_faults(engine: sa.Engine) -> None:
    with engine.connect() as conn, pytest.raises(OperationalError) as caught:
        conn.exec_driver_sql("SELECT * FROM no_such_table")
    assert unavailable_reason(caught.value) is None  # a bug of ours, not the disk's
    assert unavailable_reason(StorageFault("append")) is None  # injected at the store: stays internal_error
    assert unavailable_reason(ValueError("x")) is None
    assert unavailable_reason(ConnectionRefusedError(111, "refused")) is None  # not from a database driver


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("sqlstate", "reason"),
    [
        ("53100", "disk_full"),
        ("25006", "read_only"),
        ("08006", "unreachable"),
        ("57P01", "unreachable"),
        ("58030", "io_error"),
        ("55P03", "locked"),
        ("23505", None),  # unique violation: not a storage fault
        ("42P01", None),
    ],
)
def test_postgresql_sqlstates(sqlstate: str, reason: str | None) -> None:
    assert unavailable_reason(DBAPIError("INSERT", {}, _PgError(sqlstate))) == reason


def test_a_dropped_connection_is_unreachable() -> None:
    exc = DBAPIError("SELECT 1", {}, Exception("connection reset"), connection_invalidated=True)
    assert unavailable_reason(exc) == "unreachable"


# ---------------------------------------------------------------------------------------------- start-up words


def test_masked_url_hides_the_password_and_never_echoes_garbage() -> None:
    assert masked_url("postgresql+asyncpg://u:secret@127.0.0.1:1/x") == "postgresql+asyncpg://u:***@127.0.0.1:1/x"
    assert masked_url("sqlite+aiosqlite:////tmp/a.db") == "sqlite+aiosqlite:////tmp/a.db"
    assert "secret" not in masked_url("::not a url secret")


def test_open_failure_phrases(tmp_path: Path, engine: sa.Engine) -> None:
    assert open_failure(ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")) == "connection refused"
    assert open_failure(ModuleNotFoundError("no asyncpg", name="asyncpg")) == "its driver is not installed (asyncpg)"
    assert open_failure(TimeoutError()) == "timed out connecting"
    assert open_failure(OSError(), f"sqlite+aiosqlite:///{tmp_path}") == "the path is a directory"
    assert open_failure(_PgError("28P01")) == "authentication failed"
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA query_only=ON")
        assert open_failure(failing_write(conn, 1)) == "the database is read-only"
    for phrase in (open_failure(ValueError("line one\nline two")), open_failure(KeyError("k"))):
        assert "\n" not in phrase


# ---------------------------------------------------------------------------------------------- the fault file


def test_the_fault_file_switches_real_faults_on_and_off(engine: sa.Engine, tmp_path: Path) -> None:
    knob = tmp_path / "fault"
    faults = FaultFile(knob)
    with engine.connect() as conn:
        raw, info = conn.connection.dbapi_connection, conn.connection.info
        faults.apply(raw, info)  # no file: no fault
        conn.exec_driver_sql("INSERT INTO t VALUES (?)", ("x" * 100_000,))
        conn.commit()
        knob.write_text("full\n")
        faults.apply(raw, info)
        assert unavailable_reason(failing_write(conn)) == "disk_full"
        conn.rollback()
        knob.write_text("read_only")
        faults.apply(raw, info)
        assert unavailable_reason(failing_write(conn, 1)) == "read_only"
        conn.rollback()
        knob.write_text("")
        faults.apply(raw, info)
        conn.exec_driver_sql("INSERT INTO t VALUES (?)", ("x" * 100_000,))  # both limits are back where they were
        conn.commit()
        knob.write_text("ful")
        with pytest.raises(ValueError, match="expected one of"):
            faults.apply(raw, info)


def test_installed_from_the_environment_it_reaches_every_sqlite_engine(engine: sa.Engine, tmp_path: Path) -> None:
    knob = tmp_path / "fault"
    assert driver_faults.install_from_env({}) is None
    installed = driver_faults.install_from_env({ENV_VAR: str(knob)})
    try:
        assert installed is not None
        knob.write_text("read_only")
        with engine.begin() as conn:  # an engine built before the hook was installed, by anyone
            assert unavailable_reason(failing_write(conn, 1)) == "read_only"
        knob.write_text("")
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        driver_faults.uninstall()
    knob.write_text("read_only")
    with engine.begin() as conn:  # uninstalled: the file means nothing any more (the pragma was lifted above)
        conn.exec_driver_sql("INSERT INTO t VALUES (2)")
