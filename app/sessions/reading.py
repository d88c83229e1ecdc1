"""Reading sessions without bringing them to life: `session/list` pages (R-MULTI-4) and transcripts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.auth.policy import Principal
from app.config.schema import Config
from app.sessions.access import check_owner
from app.sessions.errors import SessionNotFound
from app.sessions.lifecycle.bring_up import stored
from app.sessions.list_pages import ListQuery, Page, Position, decode_cursor, encode_cursor
from app.sessions.live.session import LiveSession
from app.sessions.mode import EITHER, SessionMode, on_wire
from app.sessions.settings import effective
from app.sessions.views import SessionPage, SessionSummary

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.sessions.store.session_store import SessionStore
    from app.sessions.store.types import SessionRecord, TranscriptRow, TurnCost, TurnEnd

__all__ = ["SessionReader", "readable_mode"]


class SessionReader:
    """Answers reads from storage, marking which listed sessions are live; never changes the live table."""

    def __init__(
        self, store: SessionStore, live: dict[str, LiveSession], config: Callable[[], Config] | None = None
    ) -> None:
        self._store = store
        self._live = live
        self._config = config  # for each listed session's effective model (R-MODEL-4)

    def list_query(
        self,
        principal: Principal,
        *,
        include_killed: bool = False,
        mode: SessionMode | None = None,
        query: str | None = None,
        cursor: str | None = None,
    ) -> tuple[ListQuery, Position | None]:
        """The principal's list (an admin's is everyone's) and where a page of it starts; BadCursor if `cursor`
        is malformed or was made for another list. An empty `query` matches every session."""
        listed = ListQuery(None if principal.admin else principal.id, include_killed, mode, query or None)
        return listed, None if cursor is None else decode_cursor(listed, cursor)

    async def list_page(self, query: ListQuery, after: Position | None, limit: int) -> SessionPage:
        """One `session/list` page (R-MULTI-4)."""
        return self._page(query, await self._store.lists.page(query, after, limit))

    def page_now(self, query: ListQuery, after: Position | None, limit: int) -> SessionPage | None:
        """`list_page` without waiting, when the store keeps that list in memory (None: it has to be read)."""
        page = self._store.lists.kept_page(query, after, limit)
        return None if page is None else self._page(query, page)

    async def messages(
        self, principal: Principal, session_id: str, *, limit: int, before: int | None, turn_ends: bool = False
    ) -> tuple[list[TranscriptRow], int, list[TurnEnd] | None]:
        """A page of the transcript and the row total; with `turn_ends`, how each turn ending in the page ended
        (None without it: the store reads nothing more)."""
        mode = await self._readable_mode(principal, session_id)
        if turn_ends:
            return await self._store.transcript.messages_and_turn_ends(
                session_id, mode=mode, limit=limit, before=before
            )
        rows, total = await self._store.transcript.messages(session_id, mode=mode, limit=limit, before=before)
        return rows, total, None

    async def usage(self, principal: Principal, session_id: str) -> list[TurnCost]:
        """What each counted turn of the session cost, in order (`session/usage`, R-MODEL-5)."""
        mode = await self._readable_mode(principal, session_id)
        return await self._store.usage.turns(session_id, mode=mode)

    async def _readable_mode(self, principal: Principal, session_id: str) -> SessionMode:
        return await readable_mode(self._store, self._live, principal, session_id)

    def _page(self, query: ListQuery, page: Page) -> SessionPage:
        last = page.last
        return SessionPage(self._summaries(page.records), None if last is None else encode_cursor(query, last))

    def _summaries(self, records: list[SessionRecord]) -> list[SessionSummary]:
        config = None if self._config is None else self._config()
        return [
            SessionSummary(
                r.session_id,
                r.agent_alias,
                on_wire(r.mode),
                (live := self._live.get(r.session_id)) is not None and live.mode == r.mode,
                r.killed,
                r.created_at,
                r.last_activity,
                r.message_count,
                r.title,
                *((r.model, r.temperature) if config is None else effective(config, r.agent_alias, r.model,
                                                                              r.temperature)),
                r.parent_id,
                r.forked_at,
            )
            for r in records
        ]  # fmt: skip


async def readable_mode(
    store: SessionStore, live_sessions: dict[str, LiveSession], principal: Principal, session_id: str
) -> SessionMode:
    """The mode of a session the caller may read; SessionNotFound / SessionNotOwned otherwise."""
    live = live_sessions.get(session_id)
    if live is not None:
        check_owner(principal, live.owner)
        return live.mode
    # A session that is not live (released, unloaded, or after a restart); a closed chat session's
    # history stays readable, as it is listed (R-MULTI-4).
    record = await stored(store, session_id, EITHER)
    if record is None:
        raise SessionNotFound
    check_owner(principal, record.owner)
    return record.mode
