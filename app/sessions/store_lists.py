"""What `SessionStore.list` answered last, per (owner, killed included), until the store's next write.

A settings screen or panel asks `session/list` again and again while nothing changes (the web panel refreshes it
after every action); each answer was a read of both session tables on a storage thread. One daemon owns its
database (R-STORE), so nothing but this store writes those tables, and every write goes through
`SessionStore._write`, which tells this cache when it begins and when it ends. Any write empties it: a checkpoint
changes a session's message count and activity time, so there is nothing finer worth tracking. A read fills it only
if no write began or ended while it ran (`version`), so a fill can never hide a write that raced it (the rule of
`store_cache.ContextCache`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from app.sessions.store_types import SessionRecord

__all__ = ["ListCache"]

MAX_LISTS: Final = 16  # (owner, killed included) answers kept; the least recently used goes first
MAX_RECORDS: Final = 4096  # a longer list is read each time

Key = tuple[str | None, bool]  # owner (None: everyone's), killed sessions included


class ListCache:
    def __init__(self) -> None:
        self._lists: OrderedDict[Key, tuple[SessionRecord, ...]] = OrderedDict()
        self.version = 0

    def get(self, key: Key) -> tuple[SessionRecord, ...] | None:
        records = self._lists.get(key)
        if records is not None:
            self._lists.move_to_end(key)
        return records

    def fill(self, key: Key, version: int, records: list[SessionRecord]) -> None:
        """Keep `records` (read while the cache was at `version`) unless a write began or ended meanwhile."""
        if version == self.version and len(records) <= MAX_RECORDS:
            self._lists[key] = tuple(records)
            self._lists.move_to_end(key)
            while len(self._lists) > MAX_LISTS:
                self._lists.popitem(last=False)

    def writing(self) -> None:
        """A write begins or ends: what is kept may be stale, and a read running meanwhile must not fill."""
        self.version += 1
        self._lists.clear()
