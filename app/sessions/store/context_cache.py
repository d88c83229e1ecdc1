"""What `SessionStore.context` read last, kept exact by the store's own writes (docs/sessions-storage.md).

A turn reads its session's context twice (before the provider runs, and after, to decide on trimming), and
between the two it only appended rows and updated their text, through this same store: one daemon owns its
database (R-STORE), so nothing else writes these tables. The store tells the cache about each committed write:
an `append`, `update_text` or `save_snapshot` is applied to what is cached; any other write of the session (or a
failed or cancelled one, whose outcome is unknown) drops that session's entries. A read fills the cache only if no
write of that session began or ended while it ran (`version`), so a fill can never hide a write that raced it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from app.sessions.mode import SessionMode

__all__ = ["ContextCache", "ReplayRow"]

MAX_ENTRIES: Final = 128  # (session, mode, surface) entries kept; least recently used goes first
MAX_ROWS: Final = 4096  # a bigger replay (no snapshot yet on a long transcript) is read each time
MAX_CHARS: Final = 4 * 1024 * 1024


class ReplayRow(NamedTuple):
    """The transcript columns replay reads (`store_replay.rows_to_messages`)."""

    idx: int
    role: str
    content: str
    tool_call_id: str | None
    name: str | None


Key = tuple[str, SessionMode, str]  # session id, mode, surface


@dataclass(slots=True)
class Entry:
    """One cached context: its snapshot, the rows after it, and the messages rebuilt from them (lazily)."""

    snapshot: tuple[int, int, str] | None  # (snapshot_id, boundary, messages JSON)
    next_index: int
    rows: list[ReplayRow]
    chars: int
    positions: dict[int, int] = field(default_factory=dict)  # transcript index -> position in rows
    # Derived once, until a write changes their source: the parsed snapshot, and the rebuilt context
    # (a turn reads it twice; the second time it is unchanged unless a trim came between).
    prefix: list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]] | None = None


class ContextCache:
    """The model context of each (session, mode, surface) as last read or written, kept exact by the writes that


    report to it (`StoreUnits.write`); a write it cannot apply drops the session's entries."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Key, Entry] = OrderedDict()
        self._versions: dict[str, int] = {}

    # -- reads -------------------------------------------------------------------------------------

    def get(self, key: Key) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def version(self, session_id: str) -> int:
        return self._versions.get(session_id, 0)

    def fill(
        self, key: Key, version: int, snapshot: tuple[int, int, str] | None, next_index: int, rows: Iterable[Any]
    ) -> Entry:
        replay = [ReplayRow(*row) for row in rows]
        entry = Entry(snapshot, next_index, replay, sum(len(row.content) for row in replay))
        entry.positions = {row.idx: i for i, row in enumerate(replay)}
        fits = len(replay) <= MAX_ROWS and entry.chars <= MAX_CHARS
        if fits and self._versions.get(key[0], 0) == version:  # no write of this session began or ended meanwhile
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
        return entry

    # -- writes (called by the store) --------------------------------------------------------------

    def writing(self, session_id: str) -> None:
        """A write of this session begins or ends: a read running meanwhile must not fill the cache."""
        self._versions[session_id] = self._versions.get(session_id, 0) + 1

    def drop(self, session_id: str) -> None:
        for key in [key for key in self._entries if key[0] == session_id]:
            del self._entries[key]

    def appended(self, session_id: str, mode: SessionMode, surface: str, row: ReplayRow) -> None:
        for key in [key for key in self._entries if key[0] == session_id and key[1] == mode]:
            entry = self._entries[key]
            if entry.next_index != row.idx:  # not the row this entry expected next: never guess
                del self._entries[key]
                continue
            entry.next_index = row.idx + 1
            if key[2] == surface:
                entry.messages = _appended(entry.messages, row)
                entry.positions[row.idx] = len(entry.rows)
                entry.rows.append(row)
                entry.chars += len(row.content)
                if len(entry.rows) > MAX_ROWS or entry.chars > MAX_CHARS:
                    del self._entries[key]

    def updated(self, session_id: str, mode: SessionMode, index: int, content: str) -> None:
        for key in [key for key in self._entries if key[0] == session_id and key[1] == mode]:
            entry = self._entries[key]
            position = entry.positions.get(index)
            if position is None:
                continue  # a row of another surface, or one before this entry's snapshot boundary
            old = entry.rows[position]
            entry.rows[position] = old._replace(content=content)
            last = position == len(entry.rows) - 1
            entry.messages = _retexted(entry.messages, old, content) if last else None
            entry.chars += len(content) - len(old.content)

    def snapshot_saved(self, session_id: str, mode: SessionMode, surface: str, snapshot: tuple[int, int, str]) -> None:
        """The newest snapshot of `surface` now rules (ids grow per session): replay starts after its boundary."""
        boundary = snapshot[1]
        for key in [key for key in self._entries if key[:3] == (session_id, mode, surface)]:
            entry = self._entries[key]
            if entry.snapshot is not None and boundary < entry.snapshot[1]:
                del self._entries[key]  # rows before the old boundary were never cached
                continue
            entry.snapshot, entry.prefix, entry.messages = snapshot, None, None
            entry.rows = [row for row in entry.rows if row.idx > boundary]
            entry.positions = {row.idx: i for i, row in enumerate(entry.rows)}
            entry.chars = sum(len(row.content) for row in entry.rows)


# -- the rebuilt context, kept across a turn's own rows --------------------------------------------
#
# `messages` is `store_replay.rebuild(prefix, rows)`. A turn's own rows change only its end, so they
# extend it instead of a rebuild; any other row drops it (docs/sessions-storage.md, context cache).
# `test_store_context_cache.py` compares every cached context with a fresh read.


def _appended(messages: list[dict[str, Any]] | None, row: ReplayRow) -> list[dict[str, Any]] | None:
    if messages is None:
        return None
    if row.role == "user":
        return [*messages, {"role": "user", "content": row.content}]
    if row.role == "assistant":
        return [*messages, {"role": "assistant", "content": row.content}] if row.content else messages
    return None


def _retexted(messages: list[dict[str, Any]] | None, old: ReplayRow, content: str) -> list[dict[str, Any]] | None:
    """`messages` once the text of its last row (`old`) became `content`."""
    if messages is None or old.role != "assistant":
        return None
    kept = messages[:-1] if old.content else messages  # its message is the last one exactly when it had text
    return [*kept, {"role": "assistant", "content": content}] if content else kept
