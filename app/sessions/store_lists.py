"""What `SessionStore.list` answered last, per (owner, killed included), kept exact across the store's writes.

A settings screen or panel asks `session/list` again and again (the web panel refreshes it after every action);
each answer was a read of both session tables on a storage thread. One daemon owns its database (R-STORE), so
nothing but this store writes those tables, and every write goes through `SessionStore._write`, which tells this
cache when it begins and when it ends.

* A turn's checkpoints (`append`, `update_text`, `finish_turn`) set one session's activity time, and `append` its
  message count, to values the store knows once the write committed (`Activity`). Such a write is applied to the
  kept lists instead of emptying them, so a panel polling `session/list` while turns stream is still answered from
  memory. It is applied only if no other write of that session overlapped it: then its commit is that session's
  last, and the values it wrote are the stored ones. They are set, not added, so a list filled by a read that
  already saw the commit is still exact.
* Any other write, a failed one, an overlapped one or one whose caller was cancelled empties the cache as it ends.
* A read fills the cache only if no write ended while it ran (`version`): one that began meanwhile either
  empties the cache as it ends or sets values that are right whether or not the read saw its commit.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from app.sessions.store_types import Mode, SessionRecord

__all__ = ["Activity", "ListCache"]

MAX_LISTS: Final = 16  # (owner, killed included) answers kept; the least recently used goes first
MAX_RECORDS: Final = 4096  # a longer list is read each time

Key = tuple[str | None, bool]  # owner (None: everyone's), killed sessions included


@dataclass(frozen=True, slots=True)
class Activity:
    """What a committed checkpoint set in its session's listed record; `message_count` None: unchanged."""

    mode: Mode
    at: datetime
    message_count: int | None = None


def _recency(record: SessionRecord) -> tuple[datetime, str]:
    return record.last_activity, record.session_id


class _Kept:
    """One list: its records by (session id, mode), and their order once asked for."""

    __slots__ = ("ordered", "records")

    def __init__(self, records: list[SessionRecord]) -> None:
        self.records = {(r.session_id, r.mode): r for r in records}
        self.ordered: tuple[SessionRecord, ...] | None = tuple(records)


class ListCache:
    def __init__(self) -> None:
        self._lists: OrderedDict[Key, _Kept] = OrderedDict()
        self.version = 0
        self._tickets = 0
        # Per session with a write in flight: how many, and the ticket of the one in flight if it never had company
        # (0 once two overlapped: their commits may have come in either order).
        self._in_flight: Counter[str] = Counter()
        self._solo: dict[str, int] = {}

    def get(self, key: Key) -> tuple[SessionRecord, ...] | None:
        """The kept list, most recently active first (as `SessionStore.list` sorts a read)."""
        kept = self._lists.get(key)
        if kept is None:
            return None
        self._lists.move_to_end(key)
        if kept.ordered is None:
            kept.ordered = tuple(sorted(kept.records.values(), key=_recency, reverse=True))
        return kept.ordered

    def fill(self, key: Key, version: int, records: list[SessionRecord]) -> None:
        """Keep `records` (read while the cache was at `version`, sorted) unless a write ended meanwhile."""
        if version == self.version and len(records) <= MAX_RECORDS:
            self._lists[key] = _Kept(records)
            self._lists.move_to_end(key)
            while len(self._lists) > MAX_LISTS:
                self._lists.popitem(last=False)

    def write_begins(self, session_id: str) -> int:
        """A write of `session_id` begins; returns its ticket for `write_ends`."""
        self._tickets += 1
        self._solo[session_id] = 0 if self._in_flight[session_id] else self._tickets
        self._in_flight[session_id] += 1
        return self._tickets

    def write_ends(self, session_id: str, ticket: int, activity: Activity | None = None) -> None:
        """The write with `ticket` ended: committed with `activity` applied, or anything else (None). A read
        running meanwhile must not fill: it may have read before the commit."""
        self.version += 1
        alone = self._solo[session_id] == ticket
        if self._in_flight[session_id] == 1:
            del self._in_flight[session_id], self._solo[session_id]
        else:
            self._in_flight[session_id] -= 1
        if activity is None or not alone:
            self._lists.clear()
            return
        key = (session_id, activity.mode)
        for kept in self._lists.values():
            record = kept.records.get(key)
            if record is not None:
                count = record.message_count if activity.message_count is None else activity.message_count
                kept.records[key] = replace(record, last_activity=activity.at, message_count=count)
                kept.ordered = None
