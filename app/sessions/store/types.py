"""The session store's public values: records it returns and the limits it enforces. The errors it raises are the
session family's own, in `app.sessions.errors`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, get_args

from app.sessions.mode import SessionMode

__all__ = [
    "MARKER_INTERRUPTED",
    "MAX_ROW_BYTES",
    "ROLES",
    "SURFACES",
    "RecoveredContext",
    "Role",
    "SessionRecord",
    "Surface",
    "TranscriptRow",
    "TurnCost",
    "TurnEnd",
    "UsageRecord",
    "clip",
    "title_of",
]

Surface = Literal["rpc", "gateway"]  # R-ACP-7: rpc = socket and WebSocket JSON-RPC; gateway = REST/webhook/panel
# `thought` rows keep reasoning visible in the transcript; they are never replayed (R-ACP-3).
Role = Literal["user", "assistant", "thought", "tool_call", "tool_result", "marker"]

SURFACES: Final = frozenset(get_args(Surface))
ROLES: Final = frozenset(get_args(Role))

MARKER_INTERRUPTED: Final = "interrupted"
INTERRUPTED_TEXT: Final = "Turn interrupted: the daemon stopped before it finished."
MAX_ROW_BYTES: Final = 64 * 1024  # per transcript row, UTF-8 (R-ACP-5, same cap as bash output in R-AGENT-3)
MAX_ID_LEN: Final = 255
MAX_TURN_ID_LEN: Final = 64
TITLE_MAX: Final = 80  # characters of a session's title (R-MULTI-4)
TITLE_SCAN: Final = 4096  # characters of the prompt looked at for it (migration 0005 reads as many)


# -- records ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A stored session as the store returns it (both modes); `mode` is the table it was read from."""

    session_id: str
    owner: str
    agent_alias: str
    mode: SessionMode
    workspace_dir: str
    surface: Surface
    created_at: datetime
    last_activity: datetime
    killed: bool
    closed: bool
    message_count: int  # transcript rows, markers included (SPEC `messageCount`)
    title: str | None = None  # the first prompt's first line; None before any prompt (R-MULTI-4)
    resumed: bool = False  # set by `create`/`reopen` when the session was already stored
    # R-MODEL-4: the model and temperature chosen by `session/configure`; None: the agent's own.
    model: str | None = None
    temperature: float | None = None
    # R-BRANCH-1: the session this one was forked from and the transcript index it was forked at; None: not a fork.
    parent_id: str | None = None
    forked_at: int | None = None


@dataclass(frozen=True, slots=True)
class TranscriptRow:
    """One visible transcript row (`session/messages`), markers included."""

    index: int
    role: Role
    content: str
    tool_call_id: str | None
    name: str | None
    marker: str | None
    turn_id: str
    surface: Surface
    complete: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """Where an ended turn's rows end and how it ended: its last row's index and its `acp_turns.stop_reason`
    (`session/messages` with `turnEnds`; the transcript itself has no row for a turn ended on purpose)."""

    index: int
    stop_reason: str


@dataclass(frozen=True, slots=True)
class RecoveredContext:
    """The model context rebuilt for a session (R-ACP-5/6): OpenAI-shaped dicts, never a marker row."""

    messages: list[dict[str, Any]]  # the list is the caller's; the dicts are shared with the store's cache: read only
    snapshot_id: int | None  # None: no snapshot, legacy provider-safe replay of the transcript
    boundary: int  # the snapshot's boundary; -1 without one (every row is replayed)
    replayed_rows: int  # transcript rows after the boundary that were considered (surface-compatible)
    next_index: int  # the index the next transcript row will get
    covers: int  # the last transcript index these messages account for: the boundary for the next snapshot


# -- limits ----------------------------------------------------------------------------------------


def clip(text: str, limit: int = MAX_ROW_BYTES) -> str:
    """`text` if it fits in `limit` UTF-8 bytes; else its head plus a note, the whole still within `limit`."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (from a bad decoder upstream) cannot be stored as UTF-8
        data = text.encode("utf-8", "replace")
        text = data.decode("utf-8")
    if len(data) <= limit:
        return text
    note = f"\n[truncated: {len(data)} bytes did not fit the {limit}-byte row limit]"
    keep = max(0, limit - len(note.encode("utf-8")))
    # "ignore" drops a multi-byte character cut in half at the end instead of storing half of it.
    return data[:keep].decode("utf-8", "ignore") + note


def title_of(prompt: str) -> str:
    """A session's title from its first prompt: its first line, at most `TITLE_MAX` characters (R-MULTI-4)."""
    return prompt[:TITLE_SCAN].lstrip().partition("\n")[0].strip()[:TITLE_MAX]


def check_id(kind: str, value: str, max_len: int = MAX_ID_LEN) -> str:
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise ValueError(f"{kind} must be a non-empty string of at most {max_len} characters")
    return value


def check_choice(kind: str, value: str, allowed: frozenset[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{kind} must be one of {', '.join(sorted(allowed))}; got {value!r}")


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """A finished turn's usage to store (`Transcript.finish_turn(usage=…)`, or `TurnUsages.record`)."""

    turn_id: str
    provider: str
    model: str | None
    steps: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class TurnCost:
    """One finished turn's provider steps summed; `index` numbers the session's counted turns from 0."""

    index: int
    turn_id: str
    provider: str
    model: str | None
    steps: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None  # None: unpriced
    at: datetime
