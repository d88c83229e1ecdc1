"""Fixtures every suite shares. The backend switch itself lives in `db_backend.py` (docs/development.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from db_backend import drop_database, fresh_database


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """An empty database for one test: SQLite in tmp_path, or a fresh database on `ZEROCLAW_TEST_DATABASE_URL`."""
    url = fresh_database(tmp_path)
    try:
        yield url
    finally:
        drop_database(url)
