"""The frozen SQLite schema (`app.storage.sqlite_schema`) a brand-new database is created from: exactly what the
Alembic chain produces, stamped at head, private and in WAL mode; anything but a brand-new database is left alone.
"""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.storage import sqlite_schema
from app.storage.engine import default_url
from app.storage.freeze_schema import render
from app.storage.migrate import HEAD_REVISION, create_new_sqlite, is_current_sqlite_file, upgrade
from app.storage.models import Base

REGENERATE = "run `python -m app.storage.freeze_schema` after adding a migration"


def _master(path: Path) -> list[tuple[str, str, str, str | None]]:
    """Every schema object, SQLite's own autoindexes included, in creation order."""
    with sqlite3.connect(path) as con:
        return list(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"))


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    data = tmp_path / "migrated"
    data.mkdir()
    upgrade(default_url(data))
    return data / "zeroclaw.db"


# R-STORE-1: one schema, whichever way a database was made.
@pytest.mark.req("R-STORE-1")
def test_the_frozen_schema_is_what_the_migrations_produce(migrated: Path) -> None:
    assert sqlite_schema.REVISION == HEAD_REVISION, REGENERATE
    with sqlite3.connect(migrated) as con:
        assert tuple(row[0] for row in con.execute(sqlite_schema.DUMP)) == sqlite_schema.STATEMENTS, REGENERATE


@pytest.mark.req("R-STORE-1")
def test_a_new_database_is_created_at_head_like_a_migrated_one(tmp_path: Path, migrated: Path) -> None:
    path = tmp_path / "zeroclaw.db"
    assert create_new_sqlite(path)
    assert _master(path) == _master(migrated)
    assert is_current_sqlite_file(path)
    with sqlite3.connect(path) as con:
        assert list(con.execute("SELECT version_num FROM alembic_version")) == [(HEAD_REVISION,)]
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata) == []
    finally:
        engine.dispose()
    upgrade(default_url(tmp_path))  # Alembic agrees that it is at head: nothing to do, nothing changed
    assert _master(path) == _master(migrated)


@pytest.mark.req("R-STORE-1")
def test_an_empty_file_counts_as_brand_new(tmp_path: Path) -> None:
    path = tmp_path / "zeroclaw.db"
    path.touch(mode=0o600)
    assert create_new_sqlite(path)
    assert is_current_sqlite_file(path)


@pytest.mark.req("R-STORE-3")
def test_anything_but_a_brand_new_database_is_left_for_alembic(tmp_path: Path, migrated: Path) -> None:
    before = _master(migrated)
    assert not create_new_sqlite(migrated)  # has tables
    assert _master(migrated) == before
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE mine (x)")
    assert not create_new_sqlite(other)
    assert not is_current_sqlite_file(other)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, only text long enough to be read as a header\n" * 20)
    assert not create_new_sqlite(garbage)
    assert garbage.read_bytes().startswith(b"not a database")
    directory = tmp_path / "a-directory.db"
    directory.mkdir()
    assert not create_new_sqlite(directory)
    assert not is_current_sqlite_file(directory)


@pytest.mark.req("R-STORE-1")
def test_a_current_file_that_cannot_be_written_is_not_current(tmp_path: Path, migrated: Path) -> None:
    assert is_current_sqlite_file(migrated)
    with sqlite3.connect(migrated) as con:
        con.execute("UPDATE alembic_version SET version_num = '0001'")
    assert not is_current_sqlite_file(migrated)
    assert not is_current_sqlite_file(tmp_path / "missing.db")


def test_the_freezer_writes_the_schema_module_as_it_stands() -> None:
    """`python -m app.storage.freeze_schema` would leave a current module as it is (and only its generated part
    is ever rewritten)."""
    text = Path(sqlite_schema.__file__).read_text()
    assert render(text) == text, REGENERATE
