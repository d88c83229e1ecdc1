"""Row-level helpers of the session store: picking a mode's tables, loading, validating, writing, converting.

ACP and chat tables share their columns (app/storage/models/sessions.py), so one code path serves both; the
casts below only tell mypy that `session.get` on either model returns that model.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from app.sessions.store_types import (
    MODES,
    ROLES,
    Mode,
    Role,
    RowNotFound,
    SessionClosed,
    SessionKilled,
    SessionNotFound,
    SessionRecord,
    Surface,
    TranscriptRow,
    check_choice,
    check_id,
    clip,
)
from app.storage.models import AcpSession, AcpTranscriptRow, ChatMessage, ChatSession
from app.storage.types import utcnow

__all__ = [
    "SessionModel",
    "SessionRow",
    "TranscriptModel",
    "TranscriptRowModel",
    "add_row",
    "check_resumable",
    "check_row",
    "fetch_rows",
    "fetch_sessions",
    "find_session",
    "load_row",
    "load_session",
    "models",
    "to_record",
    "to_transcript_row",
]

SessionRow = AcpSession | ChatSession
SessionModel = type[AcpSession] | type[ChatSession]
TranscriptRowModel = AcpTranscriptRow | ChatMessage
TranscriptModel = type[AcpTranscriptRow] | type[ChatMessage]


def models(mode: Mode) -> tuple[SessionModel, TranscriptModel]:
    check_choice("mode", mode, MODES)
    return (AcpSession, AcpTranscriptRow) if mode == "acp" else (ChatSession, ChatMessage)


async def load_session(s: AsyncSession, mode: Mode, session_id: str) -> SessionRow:
    row = await s.get(models(mode)[0], session_id)
    if row is None:
        raise SessionNotFound(session_id, mode)
    return cast(SessionRow, row)


async def find_session(s: AsyncSession, mode: Mode, session_id: str) -> SessionRow | None:
    return cast(SessionRow | None, await s.get(models(mode)[0], session_id))


async def fetch_sessions(s: AsyncSession, query: Select[Any]) -> list[SessionRow]:
    return cast(list[SessionRow], list((await s.scalars(query)).all()))


async def fetch_rows(s: AsyncSession, query: Select[Any]) -> list[TranscriptRowModel]:
    return cast(list[TranscriptRowModel], list((await s.scalars(query)).all()))


async def load_row(s: AsyncSession, mode: Mode, session_id: str, index: int) -> TranscriptRowModel:
    row = await s.get(models(mode)[1], (session_id, index))
    if row is None:
        raise RowNotFound(session_id, index)
    return cast(TranscriptRowModel, row)


def check_resumable(row: SessionRow, mode: Mode) -> None:
    """A killed session is never rehydrated (R-ACP-9); a closed chat session is gone (R-ACP-8)."""
    if row.killed_at is not None:
        raise SessionKilled(row.session_id)
    if mode == "chat" and row.closed_at is not None:
        raise SessionClosed(row.session_id)


def check_row(role: str, tool_call_id: str | None, name: str | None, marker: str | None) -> None:
    check_choice("role", role, ROLES)
    if role in ("tool_call", "tool_result"):
        # Without the id a result cannot be paired with its call, and replay would drop both (R-ACP-6).
        check_id(f"{role} tool_call_id", tool_call_id or "")
        check_id(f"{role} name", name or "")
    if (role == "marker") != (marker is not None):
        raise ValueError("a marker is given exactly on role='marker' rows")
    if marker is not None:
        check_id("marker", marker, 32)


def add_row(
    s: AsyncSession,
    session: SessionRow,
    mode: Mode,
    *,
    role: str,
    content: str,
    tool_call_id: str | None,
    name: str | None,
    marker: str | None,
    turn_id: str,
    surface: str,
    complete: bool,
) -> int:
    """Stage one transcript row at the session's next index and return that index."""
    # The counter lives on the session row, so the index is taken and the row written in one transaction under
    # the database's single writer: indexes are dense, unique and never reused (R-ACP-1).
    index = session.next_index
    now = utcnow()
    session.next_index = index + 1
    session.last_activity = now
    s.add(
        models(mode)[1](
            session_id=session.session_id,
            idx=index,
            role=role,
            content=clip(content),
            tool_call_id=tool_call_id,
            name=name,
            marker=marker,
            turn_id=turn_id,
            interaction_surface=surface,
            complete=complete,
            created_at=now,
        )
    )
    return index


def to_record(row: SessionRow, mode: Mode, *, resumed: bool = False) -> SessionRecord:
    return SessionRecord(
        session_id=row.session_id,
        owner=row.owner,
        agent_alias=row.agent_alias,
        mode=mode,
        workspace_dir=row.workspace_dir,
        surface=cast(Surface, row.interaction_surface),
        created_at=row.created_at,
        last_activity=row.last_activity,
        killed=row.killed_at is not None,
        closed=row.closed_at is not None,
        message_count=row.next_index,
        resumed=resumed,
    )


def to_transcript_row(row: TranscriptRowModel) -> TranscriptRow:
    return TranscriptRow(
        index=row.idx,
        role=cast(Role, row.role),
        content=row.content,
        tool_call_id=row.tool_call_id,
        name=row.name,
        marker=row.marker,
        turn_id=row.turn_id,
        surface=cast(Surface, row.interaction_surface),
        complete=row.complete,
        created_at=row.created_at,
    )
