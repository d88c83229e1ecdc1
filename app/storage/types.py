"""Timezone-aware UTC time for rows, and its one wire rendering."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["UTCDateTime", "iso_z", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso_z(moment: datetime) -> str:
    """ISO-8601 in UTC with a `Z` suffix, millisecond precision (what JS `Date` round-trips)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC.

    SQLite keeps no zone and `timestamp with time zone` depends on the session zone elsewhere, so the column
    is a plain DATETIME holding UTC on every backend; naive input is refused rather than guessed at.
    """

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
