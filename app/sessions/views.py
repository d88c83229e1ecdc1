"""What the session service answers with: typed values the protocol layer shapes for the wire (`rpc.core.wire`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.sessions.mode import WireMode

__all__ = ["SessionInfo", "SessionPage", "SessionSummary"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session just opened, attached to or rehydrated (`session/new`)."""

    session_id: str
    agent_alias: str
    mode: WireMode
    message_count: int
    workspace_dir: str
    resumed: bool
    model: str | None = None  # the model its turns run with (R-MODEL-4); None: the provider chooses
    temperature: float | None = None  # None: the provider's default


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One stored session as `session/list` shows it."""

    session_id: str
    agent_alias: str
    mode: WireMode
    live: bool
    killed: bool
    created_at: datetime
    last_activity: datetime
    message_count: int
    title: str | None  # the first prompt's first line, at most 80 characters; None before any prompt
    model: str | None = None  # the model its turns run with (R-MODEL-4)
    temperature: float | None = None
    parent_id: str | None = None  # R-BRANCH-1: the session this one was forked from, and where
    forked_at: int | None = None


@dataclass(frozen=True, slots=True)
class SessionPage:
    """One `session/list` page (R-MULTI-4): `next_cursor` continues it, None on the last page."""

    sessions: list[SessionSummary]
    next_cursor: str | None
