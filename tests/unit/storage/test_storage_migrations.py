"""Alembic migrations: empty -> head, no model drift, idempotent, usable from code and the command line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.storage.engine import default_url
from app.storage.migrate import HEAD_REVISION, alembic_config, script_location, upgrade
from app.storage.models import Base


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


def _sync_engine(data_dir: Path) -> sa.Engine:
    # The stdlib driver is enough to inspect what the async migration wrote.
    return sa.create_engine(f"sqlite:///{data_dir / 'zeroclaw.db'}")


def _head(data_dir: Path) -> list[str]:
    engine = _sync_engine(data_dir)
    try:
        with engine.connect() as conn:
            return [row[0] for row in conn.exec_driver_sql("SELECT version_num FROM alembic_version")]
    finally:
        engine.dispose()


# R-CLI (`zeroclaw db upgrade`), R-AUTH-4 (pairing_tokens): models and migrations describe the same schema.
@pytest.mark.req("R-CLI")
def test_upgrade_from_empty_to_head_leaves_no_drift(data_dir: Path) -> None:
    upgrade(default_url(data_dir))

    engine = _sync_engine(data_dir)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert {"alembic_version", "pairing_tokens"} <= tables
    assert diffs == []
    assert _head(data_dir) == [HEAD_REVISION]


# R-CLI: the daemon upgrades at every start, so a second run must be a no-op.
@pytest.mark.req("R-CLI")
def test_upgrade_is_idempotent(data_dir: Path) -> None:
    url = default_url(data_dir)
    upgrade(url)
    upgrade(url)
    assert _head(data_dir) == [HEAD_REVISION]


# R-SEC-1 (spirit): the database is private to the daemon's user from its first byte.
@pytest.mark.req("R-SEC-1")
def test_upgrade_creates_the_database_file_0600(data_dir: Path) -> None:
    upgrade(default_url(data_dir))
    db_file = data_dir / "zeroclaw.db"
    for path in (db_file, data_dir / "zeroclaw.db-wal", data_dir / "zeroclaw.db-shm"):
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert db_file.exists()


def test_upgrade_uses_wal(data_dir: Path) -> None:
    upgrade(default_url(data_dir))
    engine = _sync_engine(data_dir)
    try:
        with engine.connect() as conn:
            # journal_mode=WAL is persistent in the file, so any later connection sees it.
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()


def test_downgrade_to_base_and_back(data_dir: Path) -> None:
    url = default_url(data_dir)
    upgrade(url)
    command.downgrade(alembic_config(url), "base")
    engine = _sync_engine(data_dir)
    try:
        with engine.connect() as conn:
            assert "pairing_tokens" not in sa.inspect(conn).get_table_names()
    finally:
        engine.dispose()
    upgrade(url)
    assert _head(data_dir) == [HEAD_REVISION]


def test_script_location_is_the_installed_migrations_package() -> None:
    location = script_location()
    assert (location / "env.py").is_file()
    assert (location / "script.py.mako").is_file()
    assert (location / "versions" / "0001_initial.py").is_file()


def test_percent_in_url_survives_config_interpolation() -> None:
    url = "sqlite+aiosqlite:////tmp/a%20b/zeroclaw.db"
    assert alembic_config(url).get_main_option("sqlalchemy.url") == url


def test_alembic_command_line_upgrades_with_x_url(data_dir: Path) -> None:
    ini = script_location() / "alembic.ini"
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning"}
    argv = ["-c", str(ini), "-x", f"url={default_url(data_dir)}", "upgrade", "head"]
    done = subprocess.run(
        [sys.executable, "-m", "alembic", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _head(data_dir) == [HEAD_REVISION]


# R-ARCH: the start-up shortcut must never skip a real upgrade.
def test_head_revision_constant_matches_the_scripts() -> None:
    from alembic.script import ScriptDirectory

    from app.storage.migrate import HEAD_REVISION, alembic_config

    assert ScriptDirectory.from_config(alembic_config("sqlite+aiosqlite://")).get_current_head() == HEAD_REVISION


def test_needs_upgrade_until_the_database_is_at_head(tmp_path: Path) -> None:
    from app.storage.engine import default_url
    from app.storage.migrate import needs_upgrade, upgrade_if_needed

    url = default_url(tmp_path)
    assert needs_upgrade(url)
    assert upgrade_if_needed(url) is True
    assert not needs_upgrade(url)
    assert upgrade_if_needed(url) is False
