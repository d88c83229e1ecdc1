"""Timezone-aware UTC time and its one wire rendering (no SQLAlchemy: the protocol layer imports these)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["as_utc", "iso_z", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """A stored time as aware UTC: naive values are UTC already (how every backend keeps them)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def iso_z(moment: datetime) -> str:
    """ISO-8601 in UTC with a `Z` suffix, millisecond precision (what JS `Date` round-trips)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
