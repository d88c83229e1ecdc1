"""Alembic environment, shared by `app.storage.migrate.upgrade()` and the `alembic` command line.

Command line: `alembic -c migrations/alembic.ini -x url=sqlite+aiosqlite:////path/zeroclaw.db upgrade head`.
Online migrations run on the async engine from `app.storage.engine` (see `app/storage/migrate.py` for why).
"""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from app.storage.engine import create_engine
from app.storage.models import Base

config = context.config
target_metadata = Base.metadata

# Only the command line configures logging; the daemon's own logging must survive a programmatic upgrade.
if config.config_file_name is not None and config.file_config.has_section("loggers"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: pass `-x url=...` or set sqlalchemy.url")
    return url


def run_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        render_as_batch=True,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_on(connection: Connection) -> None:
    # Batch mode: SQLite can only change a column or constraint by rebuilding the table.
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_engine(url, foreign_keys=False)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_on)
    finally:
        await engine.dispose()


def run_online() -> None:
    # A caller may lend its own (sync) connection, as Alembic's cookbook does for tests.
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
    else:
        asyncio.run(_run_async(_url()))


if context.is_offline_mode():
    run_offline()
else:
    run_online()
