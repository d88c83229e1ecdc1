"""`session/list` pages (R-MULTI-4): which sessions a list shows, in what order, and the cursor between pages.

A list is a `ListQuery` (whose sessions, killed ones or not, one mode or both, a title substring); its order is
`Position` descending: last activity, then session id, then mode (an ACP and a chat session may share an id).
A page is the first `limit` sessions after a position (keyset pagination: the store reads them from an index).
The cursor is that position and a fingerprint of the query, base64url JSON: opaque to clients, and a cursor of
another query is refused (`BadCursor`) rather than answered with a page of the wrong list.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import orjson

from app.sessions.errors import BadCursor
from app.sessions.mode import MODES, SessionMode
from app.sessions.store.types import MAX_ID_LEN, SessionRecord

__all__ = ["MAX_LIMIT", "ListQuery", "Page", "Position", "decode_cursor", "encode_cursor", "position_of"]

MAX_LIMIT: Final = 1000
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_VERSION: Final = 1
_MAX_CURSOR: Final = 1024  # characters; a real one is under 400


@dataclass(frozen=True, slots=True)
class ListQuery:
    """Which sessions a list shows: `owner`'s (None: everyone's, for an admin), killed ones only with
    `include_killed`, of one `mode` or both, whose title contains `query` case-insensitively (None: any)."""

    owner: str | None
    include_killed: bool = False
    mode: SessionMode | None = None
    query: str | None = None

    @property
    def fold(self) -> str | None:
        """The query as titles are matched: casefolded, as `title_fold` is stored."""
        return None if self.query is None else self.query.casefold()

    @property
    def filtered(self) -> bool:
        return self.mode is not None or self.query is not None

    def shows(self, record: SessionRecord) -> bool:
        """Whether this list shows `record`: what the store's SQL selects, for the records it keeps."""
        fold = self.fold
        return (
            (self.owner is None or record.owner == self.owner)
            and (self.include_killed or not record.killed)
            and (self.mode is None or record.mode == self.mode)
            and (fold is None or (record.title is not None and fold in record.title.casefold()))
        )

    def fingerprint(self) -> str:
        words = orjson.dumps([self.owner, self.include_killed, self.mode, self.query])
        return hashlib.blake2b(words, digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """Where a session sorts; a list runs from the greatest position down."""

    last_activity: datetime
    session_id: str
    mode: SessionMode


def position_of(record: SessionRecord) -> Position:
    return Position(record.last_activity, record.session_id, record.mode)


@dataclass(frozen=True, slots=True)
class Page:
    """Records of one page, newest activity first, and whether more follow (`last` is the next page's cursor)."""

    records: list[SessionRecord]
    more: bool  # sessions follow the last one

    @property
    def last(self) -> Position | None:
        """Where the next page starts (after this), or None on the last page."""
        return position_of(self.records[-1]) if self.more and self.records else None


def encode_cursor(query: ListQuery, after: Position) -> str:
    micros = (after.last_activity - _EPOCH) // timedelta(microseconds=1)
    payload = orjson.dumps([_VERSION, micros, after.session_id, after.mode, query.fingerprint()])
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def decode_cursor(query: ListQuery, cursor: str) -> Position:
    """The position `cursor` names; BadCursor if it is malformed or was made for another query."""
    try:
        if len(cursor) > _MAX_CURSOR:
            raise ValueError
        version, micros, session_id, mode, fingerprint = orjson.loads(
            base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        )
        valid = (
            version == _VERSION
            and type(micros) is int
            and isinstance(session_id, str)
            and 0 < len(session_id) <= MAX_ID_LEN
            and mode in MODES
        )
        if not valid:
            raise ValueError
        at = _EPOCH + timedelta(microseconds=micros)
    except (ValueError, TypeError, OverflowError, binascii.Error, orjson.JSONDecodeError):
        raise BadCursor from None
    if fingerprint != query.fingerprint():
        raise BadCursor
    return Position(at, session_id, mode)
