"""Schema upgrades with Alembic, configured in code (no alembic.ini needed at run time).

`migrations/env.py` runs the async engine from `app.storage.engine` itself (inside `asyncio.run`), rather
than converting the URL to a sync driver: any `[storage] url` the daemon can open is then migratable without
a second DBAPI (asyncpg has no sync twin), and migrations get the same pragmas and 0600 file as the daemon.
The cost: `upgrade()` must not be called from a thread that runs an event loop; the daemon calls it via
`asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "HEAD_REVISION",
    "alembic_config",
    "create_new_sqlite",
    "is_current_sqlite_file",
    "needs_upgrade",
    "script_location",
    "upgrade",
    "upgrade_if_needed",
]

# The newest revision in migrations/versions (a test checks it with Alembic): a current SQLite
# database then starts without importing Alembic or SQLAlchemy.
HEAD_REVISION = "0011"


def script_location() -> Path:
    """The installed `migrations` package directory (env.py, script.py.mako, versions/)."""
    import migrations

    if migrations.__file__ is None:
        raise RuntimeError("the migrations package is not a regular directory package")
    return Path(migrations.__file__).resolve().parent


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    # Config values go through configparser interpolation: a `%` (URL-escaped password) must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest revision; a no-op when it is already there."""
    from alembic import command

    command.upgrade(alembic_config(url), "head")


def needs_upgrade(url: str) -> bool:
    """False only when a SQLite file is known to be at `HEAD_REVISION`; other backends always ask Alembic."""
    from app.storage.engine import sqlite_path

    path = sqlite_path(url)
    return path is None or not is_current_sqlite_file(path)


def is_current_sqlite_file(path: Path) -> bool:
    """True when `path` is a SQLite database this process can read and write, at `HEAD_REVISION`: one query with
    the stdlib driver, no SQLAlchemy. Anything else (missing, older, unreadable, locked, not a database) is False,
    and the caller takes the path that migrates and opens with SQLAlchemy, which says precisely what is wrong."""
    if not os.access(path, os.R_OK | os.W_OK) or not path.is_file():
        return False
    try:
        # The URI form, so that a path with `?` or `#` is a file name, and mode=ro so nothing is created.
        uri = f"file:{_uri_path(path)}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=0.5)) as con:
            versions = [row[0] for row in con.execute("SELECT version_num FROM alembic_version")]
    except sqlite3.Error:
        return False
    return versions == [HEAD_REVISION]


def create_new_sqlite(path: Path) -> bool:
    """Give a brand-new SQLite database (no file, or a file without a single table) the schema at `HEAD_REVISION`
    from `app.storage.sqlite_schema`, stamped, in one transaction: no Alembic, no SQLAlchemy. True when it did;
    False, with nothing changed, for anything else (a database with tables, a path that is no database, a frozen
    schema older than the migrations): the caller then upgrades with Alembic, which says precisely what is wrong."""
    from app.storage import sqlite_schema

    if sqlite_schema.REVISION != HEAD_REVISION or (path.exists() and not path.is_file()):
        return False
    with contextlib.suppress(OSError):  # private from its first byte, as `app.storage.engine` makes it
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    try:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None, timeout=0.5)) as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("BEGIN IMMEDIATE")
            if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                con.execute("ROLLBACK")
                return False
            for statement in sqlite_schema.STATEMENTS:
                con.execute(statement)
            con.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (HEAD_REVISION,))
            con.execute("COMMIT")
    except sqlite3.Error:
        return False  # closing the connection rolled back whatever had begun
    return True


def _uri_path(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path.absolute()), safe="/")


def upgrade_if_needed(url: str) -> bool:
    """Upgrade when needed; True when Alembic ran."""
    if not needs_upgrade(url):
        return False
    upgrade(url)
    return True
