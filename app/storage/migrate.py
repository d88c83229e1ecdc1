"""Schema upgrades with Alembic, configured in code (no alembic.ini needed at run time).

`migrations/env.py` runs the async engine from `app.storage.engine` itself (inside `asyncio.run`), rather
than converting the URL to a sync driver: any `[storage] url` the daemon can open is then migratable without
a second DBAPI (asyncpg has no sync twin), and migrations get the same pragmas and 0600 file as the daemon.
The cost: `upgrade()` must not be called from a thread that runs an event loop; the daemon calls it via
`asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from app.storage.engine import sqlite_path

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["HEAD_REVISION", "alembic_config", "needs_upgrade", "script_location", "upgrade", "upgrade_if_needed"]

# The newest revision in migrations/versions (a test checks it against Alembic's own view). Knowing it lets a
# daemon whose SQLite database is current skip importing Alembic at start-up, which costs ~0.5 s.
HEAD_REVISION = "0002"


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
    path = sqlite_path(url)
    if path is None or not path.exists():
        return True
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        try:
            versions = [row[0] for row in con.execute("SELECT version_num FROM alembic_version")]
        except sqlite3.Error:
            return True
    return versions != [HEAD_REVISION]


def upgrade_if_needed(url: str) -> bool:
    """Upgrade when needed; True when Alembic ran."""
    if not needs_upgrade(url):
        return False
    upgrade(url)
    return True
