"""Durable sessions (R-ACP): ACP sessions with transcript, turns and context snapshots; chat sessions apart.

ACP and chat live in separate tables (SPEC §7.4: "Chat sessions keep their history in a separate chat table"), so
deleting an ACP session can never touch a chat session that shares its id (R-ACP-10). Both share their column
shapes through the mixins below, which lets `app.sessions.store.session_store` serve the two modes with one code path.
Behaviour (checkpoints, recovery, replay) is documented in docs/sessions-storage.md.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, CheckConstraint, Float, ForeignKey, Index, String, Text, false, text
from sqlalchemy.orm import Mapped, mapped_column

from app.storage.models.base import Base
from app.storage.types import Int64, UTCDateTime

__all__ = [
    "AcpSession",
    "AcpSnapshot",
    "AcpTranscriptRow",
    "AcpTurn",
    "AcpTurnUsage",
    "ChatMessage",
    "ChatSession",
    "ChatSnapshot",
    "ChatTurnUsage",
]

# Kept as SQL text so the migration and the models state the same constraint.
SURFACE_CHECK = "interaction_surface IN ('rpc', 'gateway')"
ROLE_CHECK = "role IN ('user', 'assistant', 'thought', 'tool_call', 'tool_result', 'marker')"

# Partial indexes on what is still open (migration 0004), each condition worded as the queries word
# it: SQLite uses one only then (docs/sessions-storage.md).


def _open_rows_index(name: str) -> Index:
    return Index(
        name, "session_id", "turn_id", sqlite_where=text("complete = 0"), postgresql_where=text("complete = false")
    )


class _SessionColumns:
    """What every session row carries, whatever its mode."""

    session_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    owner: Mapped[str] = mapped_column(String(255))  # the principal id (R-SES-1)
    agent_alias: Mapped[str] = mapped_column(String(255))
    workspace_dir: Mapped[str] = mapped_column(Text)
    interaction_surface: Mapped[str] = mapped_column(String(16))  # where the session was created
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_activity: Mapped[datetime] = mapped_column(UTCDateTime())
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    killed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # tombstone (R-ACP-9)
    # The next transcript row's index, so also the row count (no row is deleted alone). A
    # counter, not max(idx)+1: `append` and `session/list` never scan the transcript.
    next_index: Mapped[int] = mapped_column(Int64)
    # The first prompt's first line (`session/list`, R-MULTI-4); the folded copy is what `query`
    # matches, folded by Python so both backends match alike (SQLite's lower() folds ASCII only).
    title: Mapped[str | None] = mapped_column(String(80))
    title_fold: Mapped[str | None] = mapped_column(String(320))
    # R-MULTI-1: no `session/update` of this session has had a larger `seq`. While the session
    # is live this is a reservation ahead of what was sent, made exact when it is let go, so a
    # crash skips seqs, never reuses one.
    seq: Mapped[int] = mapped_column(Int64, server_default=text("0"))
    # R-MODEL-4 (migration 0008): the model and temperature `session/configure` chose; None: the agent's own.
    model: Mapped[str | None] = mapped_column(String(255))
    temperature: Mapped[float | None] = mapped_column(Float)
    # R-BRANCH-1 (migration 0011): the session this one was forked from, and the transcript index it was forked at.
    parent_id: Mapped[str | None] = mapped_column(String(255))
    forked_at: Mapped[int | None] = mapped_column(Int64)


class _RowColumns:
    """One visible transcript row (R-ACP-1); (session_id, idx) is the key, and idx never changes."""

    idx: Mapped[int] = mapped_column(Int64, primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)  # at most 64 KiB of UTF-8 (R-ACP-5)
    tool_call_id: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(255))  # the tool's name on tool_call / tool_result rows
    marker: Mapped[str | None] = mapped_column(String(32))  # e.g. "interrupted" on role="marker" rows
    turn_id: Mapped[str] = mapped_column(String(64))
    interaction_surface: Mapped[str] = mapped_column(String(16))  # R-ACP-7
    complete: Mapped[bool] = mapped_column(Boolean)  # False while assistant text is still streaming
    # R-BRANCH-2 (migration 0011): dropped by `session/rollback`: kept and readable, never given to the model.
    rolled_back: Mapped[bool] = mapped_column(Boolean, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


def _list_indexes(table: str) -> tuple[Index, Index]:
    """The keyset of `session/list` pages (migration 0005): newest activity first, per owner or everyone's."""
    return (
        Index(f"ix_{table}_owner_activity", "owner", "last_activity", "session_id"),
        Index(f"ix_{table}_activity", "last_activity", "session_id"),
    )


class AcpSession(_SessionColumns, Base):
    __tablename__ = "acp_sessions"
    __table_args__ = (CheckConstraint(SURFACE_CHECK, name="surface"), *_list_indexes("acp_sessions"))


class AcpTranscriptRow(_RowColumns, Base):
    __tablename__ = "acp_transcript"
    __table_args__ = (
        CheckConstraint(SURFACE_CHECK, name="surface"),
        CheckConstraint(ROLE_CHECK, name="role"),
        _open_rows_index("ix_acp_transcript_open"),
    )

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("acp_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )


class AcpTurn(Base):
    """One turn of an ACP session. A turn with no `finished_at` was cut short: recovery looks for these."""

    __tablename__ = "acp_turns"
    __table_args__ = (
        CheckConstraint(SURFACE_CHECK, name="surface"),
        Index(
            "ix_acp_turns_open",
            "session_id",
            sqlite_where=text("finished_at IS NULL"),
            postgresql_where=text("finished_at IS NULL"),
        ),
    )

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("acp_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )
    turn_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    interaction_surface: Mapped[str] = mapped_column(String(16))
    first_index: Mapped[int] = mapped_column(Int64)  # orders turns without trusting clocks
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    stop_reason: Mapped[str | None] = mapped_column(String(32))


class _SnapshotColumns:
    """A retained provider context (R-ACP-1..3): what the model is given, independent of the transcript."""

    snapshot_id: Mapped[int] = mapped_column(Int64, primary_key=True)  # increases per session
    messages: Mapped[str] = mapped_column(Text)  # JSON list of OpenAI-shaped messages; "[]" is authoritative
    boundary: Mapped[int] = mapped_column(Int64)  # transcript rows with idx > boundary are replayed on top
    interaction_surface: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AcpSnapshot(_SnapshotColumns, Base):
    __tablename__ = "acp_snapshots"
    __table_args__ = (CheckConstraint(SURFACE_CHECK, name="surface"),)

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("acp_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )


class ChatSession(_SessionColumns, Base):
    __tablename__ = "chat_sessions"
    __table_args__ = (CheckConstraint(SURFACE_CHECK, name="surface"), *_list_indexes("chat_sessions"))


class ChatMessage(_RowColumns, Base):
    __tablename__ = "chat_messages"
    __table_args__ = (
        CheckConstraint(SURFACE_CHECK, name="surface"),
        CheckConstraint(ROLE_CHECK, name="role"),
        _open_rows_index("ix_chat_messages_open"),
    )

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )


class ChatSnapshot(_SnapshotColumns, Base):
    """A chat session's retained context (R-MULTI-5, migration 0006): trimmed as an ACP session's is."""

    __tablename__ = "chat_snapshots"
    __table_args__ = (CheckConstraint(SURFACE_CHECK, name="surface"),)

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )


class _TurnUsageColumns:
    """What one finished turn's provider steps cost (R-MODEL-5, migration 0010); `idx` numbers the turns from 0."""

    idx: Mapped[int] = mapped_column(Int64, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(255))  # the `[providers.<alias>]` it ran on
    model: Mapped[str | None] = mapped_column(String(255))
    steps: Mapped[int] = mapped_column(Int64)
    input_tokens: Mapped[int] = mapped_column(Int64)
    output_tokens: Mapped[int] = mapped_column(Int64)
    cache_read_tokens: Mapped[int] = mapped_column(Int64)
    cache_write_tokens: Mapped[int] = mapped_column(Int64)
    cost_usd: Mapped[float | None] = mapped_column(Float)  # NULL: unpriced (`[providers.<p>.pricing]`)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AcpTurnUsage(_TurnUsageColumns, Base):
    __tablename__ = "acp_turn_usage"

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("acp_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )


class ChatTurnUsage(_TurnUsageColumns, Base):
    __tablename__ = "chat_turn_usage"

    session_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("chat_sessions.session_id", ondelete="CASCADE"), primary_key=True
    )
