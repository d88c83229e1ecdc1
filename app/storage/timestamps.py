"""Timezone-aware UTC time and its one wire rendering (no SQLAlchemy: the protocol layer imports these)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

__all__ = ["as_utc", "iso_z", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """A stored time as aware UTC: naive values are UTC already (how every backend keeps them)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@lru_cache(maxsize=4096)
def iso_z(moment: datetime) -> str:
    """ISO-8601 in UTC with a `Z` suffix, millisecond precision (what JS `Date` round-trips), as
    `isoformat(timespec="milliseconds")` writes it.

    `session/list` renders two times per session on every call, mostly the same ones each time, so renderings are
    remembered (equal datetimes are the same instant: one rendering, whatever their zone); a new one is
    %-formatted, which costs half of `isoformat`.
    """
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031 (faster than an f-string with format specs)
        utc.year,
        utc.month,
        utc.day,
        utc.hour,
        utc.minute,
        utc.second,
        utc.microsecond // 1000,
    )
