"""Timezone-aware UTC time for rows; `utcnow` and `iso_z` live in `app.storage.timestamps` (no SQLAlchemy)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from app.storage.timestamps import as_utc, iso_z, utcnow

__all__ = ["Int64", "UTCDateTime", "iso_z", "utcnow"]

# 64-bit everywhere, as a `before` may be up to 2**63 - 1: BIGINT on PostgreSQL, whose INTEGER is
# 32-bit (migration 0003); a large `before` then binds as int8 (docs/operations.md).
Int64 = Integer().with_variant(BigInteger(), "postgresql")


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
        return as_utc(value)
