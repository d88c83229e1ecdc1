"""Schema upgrades with Alembic, configured in code (no alembic.ini needed at run time).

`migrations/env.py` runs the async engine from `app.storage.engine` itself (inside `asyncio.run`), rather
than converting the URL to a sync driver: any `[storage] url` the daemon can open is then migratable without
a second DBAPI (asyncpg has no sync twin), and migrations get the same pragmas and 0600 file as the daemon.
The cost: `upgrade()` must not be called from a thread that runs an event loop; the daemon calls it via
`asyncio.to_thread`.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["alembic_config", "script_location", "upgrade"]


def script_location() -> Path:
    """The installed `migrations` package directory (env.py, script.py.mako, versions/)."""
    import migrations

    if migrations.__file__ is None:
        raise RuntimeError("the migrations package is not a regular directory package")
    return Path(migrations.__file__).resolve().parent


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    # Config values go through configparser interpolation: a `%` (URL-escaped password) must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest revision; a no-op when it is already there."""
    command.upgrade(alembic_config(url), "head")
