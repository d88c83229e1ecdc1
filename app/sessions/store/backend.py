"""The store's one seam to its database: `StoreBackend`, the units of work a `SessionStore` runs in a transaction,
and the typed values they take instead of long parameter lists.

Two implementations, chosen by SQL dialect in `backend_for`: `CoreBackend` (SQLAlchemy Core, every database) and
`SqliteBackend` (the hottest units as SQL text on the sqlite3 connection, returning exactly what Core returns;
tests/unit/sessions/test_store_backends.py compares them value by value). Every unit takes the unit's `Session`
first; what it raises rolls the transaction back.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from app.sessions.list_pages import ListQuery, Page, Position
from app.sessions.mode import SessionMode
from app.sessions.store.types import Role, SessionRecord, Surface, TranscriptRow, TurnEnd

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["ContextRows", "NewRow", "NewSession", "NewSnapshot", "StoreBackend", "TextCheckpoint", "TurnEnding"]

# (snapshot_id, boundary, messages JSON) or None; next_index; rows of (idx, role, content, tool_call_id, name)
ContextRows = tuple[tuple[int, int, str] | None, int, list[Any]]


class NewSession(msgspec.Struct, frozen=True):
    """A session to store (or the stored one with this id to resume), its first `seq_reserved` seqs reserved."""

    mode: SessionMode
    session_id: str
    owner: str
    agent_alias: str
    workspace_dir: str
    surface: Surface
    seq_reserved: int = 0


class NewRow(msgspec.Struct, frozen=True):
    """One transcript row to append at the session's next index, stamped `at` (the session's activity too).
    `title` titles a session that has none (from its first prompt)."""

    mode: SessionMode
    session_id: str
    role: Role
    content: str
    tool_call_id: str | None
    name: str | None
    marker: str | None
    turn_id: str
    surface: Surface
    complete: bool
    at: datetime
    title: str | None = None


class TextCheckpoint(msgspec.Struct, frozen=True):
    """The text streamed so far into transcript row `index` (R-ACP-4)."""

    mode: SessionMode
    session_id: str
    index: int
    content: str
    complete: bool
    at: datetime


class TurnEnding(msgspec.Struct, frozen=True):
    """A turn reaching its terminal state: its rows complete, its record ended with `stop_reason`."""

    mode: SessionMode
    session_id: str
    turn_id: str
    stop_reason: str
    at: datetime


class NewSnapshot(msgspec.Struct, frozen=True):
    """A retained-context snapshot (`payload`, JSON) and the transcript `boundary` it covers (R-ACP-2); `surface`
    None means the session's own; only the newest `keep` of that surface are kept."""

    mode: SessionMode
    session_id: str
    payload: str
    boundary: int
    surface: Surface | None
    keep: int


class StoreBackend(Protocol):
    """The units of work of the session store on one kind of database."""

    def create(self, s: Session, new: NewSession) -> SessionRecord: ...

    def get(self, s: Session, mode: SessionMode, session_id: str) -> SessionRecord | None: ...

    def seq_of(self, s: Session, mode: SessionMode, session_id: str) -> int: ...

    def store_seq(self, s: Session, mode: SessionMode, session_id: str, value: int, reserved: int | None) -> None:
        """Reserve seqs up to `value`, or with `reserved` store the exact last one unless reserved anew since."""
        ...

    def list_page(self, s: Session, query: ListQuery, after: Position | None, limit: int | None) -> Page: ...

    def messages(
        self, s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int]: ...

    def messages_and_turn_ends(
        self, s: Session, mode: SessionMode, session_id: str, limit: int, before: int | None
    ) -> tuple[list[TranscriptRow], int, list[TurnEnd]]: ...

    def append(self, s: Session, row: NewRow) -> int: ...

    def update_text(self, s: Session, checkpoint: TextCheckpoint) -> None: ...

    def finish_turn(self, s: Session, ending: TurnEnding) -> None: ...

    def context_rows(self, s: Session, mode: SessionMode, session_id: str, surface: Surface) -> ContextRows: ...

    def save_snapshot(self, s: Session, snapshot: NewSnapshot) -> tuple[int, Surface]: ...
