"""Which database the storage, session and e2e tests run on: the one switch (docs/development.md).

Unset `ZEROCLAW_TEST_DATABASE_URL` (the README's `python3 -m pytest -q`): every test gets a SQLite file in its own
temp dir. Set it to a PostgreSQL server URL whose role may create databases (`.ci/run` starts a throw-away cluster
with `.ci/postgres.py` and sets it): every test that asks for a database gets a fresh, empty one on that server,
dropped when the test ends; the schema comes from the same Alembic chain as on SQLite.

Unit tests take the `database_url` fixture (tests/conftest.py); the e2e harness calls `fresh_database()` per
config dir and `drop_database()` at teardown.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy import URL, make_url

__all__ = ["ENV_VAR", "backend", "default_url", "drop_database", "fresh_database", "query", "server_url"]

ENV_VAR = "ZEROCLAW_TEST_DATABASE_URL"
_PREFIX = "zc_test_"


def server_url() -> str | None:
    return os.environ.get(ENV_VAR) or None


def default_url(data_dir: Path) -> str:
    """The daemon's own default: `<data_dir>/zeroclaw.db`."""
    from app.storage.engine import default_url

    return default_url(data_dir)


def backend() -> str:
    """'sqlite' or the server's backend name ('postgresql')."""
    url = server_url()
    return "sqlite" if url is None else make_url(url).get_backend_name()


def fresh_database(tmp_dir: Path) -> str:
    """A URL to an empty database: `<tmp_dir>/zeroclaw.db`, or a new database on the test server."""
    url = server_url()
    if url is None:
        return default_url(tmp_dir)
    server = make_url(url)
    name = f"{_PREFIX}{uuid.uuid4().hex[:16]}"
    _admin(server, f'CREATE DATABASE "{name}"')
    return _render(server.set(database=name))


def drop_database(url: str) -> None:
    """Drop a database `fresh_database` made (closing whatever still connects); SQLite files go with their dir."""
    target = make_url(url)
    server = server_url()
    if server is None or not (target.database or "").startswith(_PREFIX):
        return
    _admin(make_url(server), f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')


def query(url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Rows of one SELECT on any backend, through the daemon's own engine setup (for tests that look inside)."""
    from sqlalchemy import text

    from app.storage import create_engine

    async def run() -> list[tuple[Any, ...]]:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                return [tuple(row) for row in await connection.execute(text(sql), params)]
        finally:
            await engine.dispose()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def execute(url: str, sql: str, **params: Any) -> None:
    """One statement on any backend, committed (for tests that shape a database as an older release left it)."""
    from sqlalchemy import text

    from app.storage import create_engine

    async def run() -> None:
        engine = create_engine(url)
        try:
            async with engine.begin() as connection:
                await connection.execute(text(sql), params)
        finally:
            await engine.dispose()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result()


def _render(url: URL) -> str:
    return url.render_as_string(hide_password=False)


def _admin(server: URL, statement: str) -> None:
    """Run one statement on the server's maintenance database, from a thread (callers may be inside a loop)."""

    async def run() -> None:
        import asyncpg

        connection: Any = await asyncpg.connect(_render(server.set(drivername="postgresql")))
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result()
