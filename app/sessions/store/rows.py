"""Row-level helpers of the session store: picking a mode's tables, loading, validating, writing, converting.

ACP and chat tables share their columns (app/storage/models/sessions.py), so one code path serves both; the
casts below only tell mypy that `session.get` on either model returns that model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import KeyedColumnElement

from app.sessions.errors import SessionClosed, SessionKilled, SessionNotFound
from app.sessions.mode import MODES, SessionMode
from app.sessions.store.types import (
    ROLES,
    SessionRecord,
    Surface,
    check_choice,
    check_id,
    clip,
    title_of,
)
from app.storage.models import AcpSession, AcpSnapshot, AcpTranscriptRow, ChatMessage, ChatSession, ChatSnapshot
from app.storage.types import utcnow

__all__ = [
    "SessionModel",
    "SessionRow",
    "SnapshotModel",
    "TranscriptModel",
    "TranscriptRowModel",
    "add_row",
    "check_resumable",
    "check_row",
    "find_session",
    "load_session",
    "models",
    "record_columns",
    "record_from_columns",
    "to_record",
    "transcript_columns",
]

SessionRow = AcpSession | ChatSession
SessionModel = type[AcpSession] | type[ChatSession]
TranscriptRowModel = AcpTranscriptRow | ChatMessage
TranscriptModel = type[AcpTranscriptRow] | type[ChatMessage]
SnapshotModel = type[AcpSnapshot] | type[ChatSnapshot]


def models(mode: SessionMode) -> tuple[SessionModel, TranscriptModel, SnapshotModel]:
    """A mode's session, transcript and retained-context snapshot tables (R-ACP-1, R-MULTI-5)."""
    check_choice("mode", mode, MODES)
    if mode == SessionMode.DURABLE:
        return AcpSession, AcpTranscriptRow, AcpSnapshot
    return ChatSession, ChatMessage, ChatSnapshot


def load_session(s: Session, mode: SessionMode, session_id: str) -> SessionRow:
    row = s.get(models(mode)[0], session_id)
    if row is None:
        raise SessionNotFound(session_id=session_id, mode=mode)
    return cast(SessionRow, row)


def find_session(s: Session, mode: SessionMode, session_id: str) -> SessionRow | None:
    return cast(SessionRow | None, s.get(models(mode)[0], session_id))


def check_resumable(row: SessionRow, mode: SessionMode) -> None:
    """A killed session is never rehydrated (R-ACP-9); a closed chat session is gone (R-ACP-8)."""
    if row.killed_at is not None:
        raise SessionKilled(session_id=row.session_id, mode=mode)
    if mode == SessionMode.CHAT and row.closed_at is not None:
        raise SessionClosed(session_id=row.session_id)


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
    s: Session,
    session: SessionRow,
    mode: SessionMode,
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
    # Index taken and row written in one transaction under the single writer: indexes are dense,
    # unique and never reused (R-ACP-1).
    index = session.next_index
    now = utcnow()
    session.next_index = index + 1
    session.last_activity = now
    if role == "user" and session.title is None:
        session.title = title_of(content)
        session.title_fold = session.title.casefold()
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


def to_record(row: SessionRow, mode: SessionMode, *, resumed: bool = False) -> SessionRecord:
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
        title=row.title,
        resumed=resumed,
        model=row.model,
        temperature=row.temperature,
        parent_id=row.parent_id,
        forked_at=row.forked_at,
    )


# Hot reads select these columns with Core and build the records directly, without ORM instances
# (docs/sessions-storage.md, "The runner").


def record_columns(model: SessionModel) -> tuple[KeyedColumnElement[Any], ...]:
    return (
        model.session_id,
        model.owner,
        model.agent_alias,
        model.workspace_dir,
        model.interaction_surface,
        model.created_at,
        model.last_activity,
        model.killed_at,
        model.closed_at,
        model.next_index,
        model.title,
        model.model,
        model.temperature,
        model.parent_id,
        model.forked_at,
    )  # type: ignore[return-value]


def record_from_columns(row: Sequence[Any], mode: SessionMode) -> SessionRecord:
    (sid, owner, alias, workspace, surface, created, last, killed, closed, next_index, title, model, temperature,
     parent_id, forked_at) = row  # fmt: skip
    return SessionRecord(
        session_id=sid,
        owner=owner,
        agent_alias=alias,
        mode=mode,
        workspace_dir=workspace,
        surface=surface,
        created_at=created,
        last_activity=last,
        killed=killed is not None,
        closed=closed is not None,
        message_count=next_index,
        title=title,
        model=model,
        temperature=temperature,
        parent_id=parent_id,
        forked_at=forked_at,
    )


def transcript_columns(model: TranscriptModel) -> tuple[KeyedColumnElement[Any], ...]:
    return (
        model.idx,
        model.role,
        model.content,
        model.tool_call_id,
        model.name,
        model.marker,
        model.turn_id,
        model.interaction_surface,
        model.complete,
        model.created_at,
    )  # type: ignore[return-value]
