"""Fixtures every suite shares. The backend switch itself lives in `db_backend.py` (docs/development.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from db_backend import drop_database, fresh_database, server_url


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """An empty database for one test: SQLite in tmp_path, or a fresh database on `ZEROCLAW_TEST_DATABASE_URL`."""
    url = fresh_database(tmp_path)
    try:
        yield url
    finally:
        drop_database(url)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a PostgreSQL pass, tests marked `sqlite_only` are deselected (listed as such), not skipped: they test a
    SQLite mechanism (pragma-driven faults, the SQLite fast start), which that pass has no counterpart of."""
    if server_url() is None:
        return
    keep = [item for item in items if item.get_closest_marker("sqlite_only") is None]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("sqlite_only")])
        items[:] = keep
