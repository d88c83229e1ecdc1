"""Whole session lists `SessionStore` read last, per (owner, killed included), kept exact across its writes; any
`session/list` page of such a list (any mode, query or cursor) is answered from it (R-MULTI-4).

A settings screen or panel asks `session/list` again and again (the web panel refreshes it after every action);
each answer was a read of both session tables on a storage thread. One daemon owns its database (R-STORE), so
nothing but this store writes those tables, and every write goes through `SessionStore._write`, which tells this
cache when it begins and when it ends.

* A committed write says what it changed in the listed records (a `Change`, from values the store knows once it
  committed): a turn's checkpoints, `touch`, `close` and `kill` set one record's activity time and flags
  (`Activity`), `create` and `reopen` put the record they return in the lists it belongs to (`Listed`), `delete`
  takes it out (`Removed`), a snapshot changes nothing listed (`UNCHANGED`). The change is applied to the kept
  lists instead of emptying them, so a panel polling `session/list` while turns stream and sessions come and go
  is still answered from memory. It is applied only if no other write of that session overlapped it: then its
  commit is that session's last, and the values it wrote are the stored ones. They are set, not added, so a list
  filled by a read that already saw the commit is still exact.
* A write that says nothing (`None`: recovery), a failed one, an overlapped one or one whose caller was cancelled
  empties the cache as it ends.
* A read fills the cache only if no write ended while it ran (`version`): one that began meanwhile either
  empties the cache as it ends or sets values that are right whether or not the read saw its commit.
* Only a whole list is kept (a read of every session of the key: `list()`, or a first page with no filter that
  had no next page), of at most `MAX_RECORDS`: a daemon with 50,000 sessions keeps none, and its pages are read
  from the index (docs/sessions-storage.md).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from app.sessions.list_pages import ListQuery, Page, Position, position_of
from app.sessions.mode import SessionMode
from app.sessions.store.types import SessionRecord

__all__ = ["UNCHANGED", "Activity", "Change", "ListCache", "Listed", "Removed"]

MAX_LISTS: Final = 16  # (owner, killed included) answers kept; the least recently used goes first
MAX_RECORDS: Final = 4096  # a longer list is read each time

Key = tuple[str | None, bool]  # owner (None: everyone's), killed sessions included


@dataclass(frozen=True, slots=True)
class Activity:
    """What a committed write set in its session's record: its activity time, and where not None its message
    count, closed or killed flag, and its title if it had none (the first prompt's)."""

    mode: SessionMode
    at: datetime
    message_count: int | None = None
    closed: bool | None = None
    killed: bool | None = None
    title: str | None = None

    def apply(self, kept: _Kept, key: Key, session_id: str) -> None:
        record = kept.records.get((session_id, self.mode))
        if record is not None:
            kept.put(
                key,
                replace(
                    record,
                    last_activity=self.at,
                    message_count=record.message_count if self.message_count is None else self.message_count,
                    closed=record.closed if self.closed is None else self.closed,
                    killed=record.killed if self.killed is None else self.killed,
                    title=self.title if record.title is None else record.title,
                ),
            )


@dataclass(frozen=True, slots=True)
class Listed:
    """The session's whole record as the write committed it (`create`, `reopen`), as a read lists it."""

    record: SessionRecord

    @classmethod
    def of(cls, record: SessionRecord) -> Listed:
        return cls(replace(record, resumed=False))  # a read lists stored records: never "resumed"

    def apply(self, kept: _Kept, key: Key, session_id: str) -> None:
        kept.put(key, self.record)


@dataclass(frozen=True, slots=True)
class Removed:
    """The session is gone (`delete`)."""

    mode: SessionMode

    def apply(self, kept: _Kept, key: Key, session_id: str) -> None:
        kept.drop((session_id, self.mode))


@dataclass(frozen=True, slots=True)
class _Unchanged:
    """A write that leaves every listed record as it was."""

    def apply(self, kept: _Kept, key: Key, session_id: str) -> None:
        pass


UNCHANGED: Final = _Unchanged()  # nothing a list shows (a snapshot, deleting what was not there)

Change = Activity | Listed | Removed | _Unchanged


def listed_in(key: Key, record: SessionRecord) -> bool:
    """Whether a read for `key` lists `record` (closed sessions of both modes are: their history is kept)."""
    owner, include_killed = key
    return (owner is None or record.owner == owner) and (include_killed or not record.killed)


class _Kept:
    """One list: its records by (session id, mode), and their order (ascending position) once asked for."""

    __slots__ = ("ascending", "records")

    def __init__(self, records: list[SessionRecord]) -> None:
        self.records = {(r.session_id, r.mode): r for r in records}
        self.ascending: tuple[SessionRecord, ...] | None = tuple(sorted(records, key=position_of))

    def sorted(self) -> tuple[SessionRecord, ...]:
        if self.ascending is None:
            self.ascending = tuple(sorted(self.records.values(), key=position_of))
        return self.ascending

    def put(self, key: Key, record: SessionRecord) -> None:
        """`record` as it is now: kept if this list shows it, taken out if it no longer does."""
        if listed_in(key, record):
            self.records[record.session_id, record.mode] = record
            self.ascending = None
        else:
            self.drop((record.session_id, record.mode))

    def drop(self, record_key: tuple[str, SessionMode]) -> None:
        if self.records.pop(record_key, None) is not None:
            self.ascending = None


class ListCache:
    """Whole `session/list` lists kept in memory per (owner, include_killed), kept exact by each write's `Change`;


    a write whose effect is unknown empties it."""

    def __init__(self) -> None:
        self._lists: OrderedDict[Key, _Kept] = OrderedDict()
        self.version = 0
        self._tickets = 0
        # Per session: writes in flight, and the ticket of a lone one (0 once two overlapped: either
        # may have committed first).
        self._in_flight: Counter[str] = Counter()
        self._solo: dict[str, int] = {}

    def page(self, query: ListQuery, after: Position | None, limit: int | None) -> Page | None:
        """The page a read would answer (the first `limit` after `after`, None: all), if its list is kept."""
        key = (query.owner, query.include_killed)
        kept = self._lists.get(key)
        if kept is None:
            return None
        self._lists.move_to_end(key)
        ascending = kept.sorted()
        end = len(ascending) if after is None else bisect_left(ascending, after, key=position_of)
        if not query.filtered:
            start = 0 if limit is None else max(0, end - limit - 1)
            chosen = list(reversed(ascending[start:end]))
        else:
            chosen = []
            for index in range(end - 1, -1, -1):
                if query.shows(ascending[index]):
                    chosen.append(ascending[index])
                    if limit is not None and len(chosen) > limit:
                        break
        if limit is None or len(chosen) <= limit:
            return Page(chosen, more=False)
        return Page(chosen[:limit], more=True)

    def fill(self, key: Key, version: int, records: list[SessionRecord]) -> None:
        """Keep the whole list `records` (read while the cache was at `version`, newest first) unless a write
        ended meanwhile."""
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

    def write_ends(self, session_id: str, ticket: int, change: Change | None = None) -> None:
        """The write with `ticket` ended: committed with `change` applied, or anything else (None). A read
        running meanwhile must not fill: it may have read before the commit."""
        self.version += 1
        alone = self._solo[session_id] == ticket
        if self._in_flight[session_id] == 1:
            del self._in_flight[session_id], self._solo[session_id]
        else:
            self._in_flight[session_id] -= 1
        if change is None or not alone:
            self._lists.clear()
            return
        for key, kept in list(self._lists.items()):
            change.apply(kept, key, session_id)
            if len(kept.records) > MAX_RECORDS:  # a list this long is read each time (`fill`)
                del self._lists[key]
