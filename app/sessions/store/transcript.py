"""A session's transcript (R-ACP): its rows, turns and retained-context snapshots, and recovery of the turns a
stopped daemon left open. Every write is one committed transaction, i.e. one checkpoint (R-ACP-4).
docs/sessions-storage.md has the checkpoint policy and the recovery algorithm."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, Final

import orjson
from sqlalchemy.orm import Session

from app.sessions.mode import MODES, SessionMode
from app.sessions.store import replay
from app.sessions.store.backend import NewRow, NewSnapshot, TextCheckpoint, TurnEnding
from app.sessions.store.context_cache import ReplayRow
from app.sessions.store.list_cache import UNCHANGED, Activity
from app.sessions.store.recovery import close_open_turns
from app.sessions.store.rows import add_row, check_resumable, check_row, load_session
from app.sessions.store.types import (
    INTERRUPTED_TEXT,
    MARKER_INTERRUPTED,
    MAX_TURN_ID_LEN,
    SURFACES,
    RecoveredContext,
    Role,
    Surface,
    TranscriptRow,
    TurnEnd,
    UsageRecord,
    check_choice,
    check_id,
    clip,
    title_of,
)
from app.sessions.store.units import StoreUnits
from app.sessions.store.usage import add_usage
from app.storage.types import utcnow

__all__ = ["Transcript"]

# Older snapshots are kept for inspection only; the newest one per surface counts.
SNAPSHOTS_KEPT: Final = 3


class Transcript:
    """The transcript side of the store (`SessionStore.transcript`): what a turn writes as it runs, what
    `session/messages` reads, and the model context rebuilt from both (R-ACP-5/6/7)."""

    def __init__(self, units: StoreUnits) -> None:
        self._units = units

    async def append(
        self,
        session_id: str,
        *,
        mode: SessionMode = SessionMode.DURABLE,
        role: Role,
        content: str,
        tool_call_id: str | None = None,
        name: str | None = None,
        marker: str | None = None,
        turn_id: str,
        surface: Surface,
        complete: bool = True,
    ) -> int:
        """Commit one transcript row now (R-ACP-4) and return its index; content over 64 KiB is clipped (R-ACP-5).

        The first non-marker row of a turn id opens that turn; `finish_turn` ends it. A turn left open is what
        `recover_interrupted` repairs.
        """
        check_choice("mode", mode, MODES)
        check_row(role, tool_call_id, name, marker)
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_choice("surface", surface, SURFACES)
        content = clip(content)
        now = utcnow()
        title = title_of(content) if role == "user" else None  # set only on a session that has none
        row = NewRow(
            mode, session_id, role, content, tool_call_id, name, marker, turn_id, surface, complete, now, title
        )
        index: int = await self._units.write(
            "append", session_id, partial(_appended, mode, now, title), self._units.backend.append, row
        )
        self._units.contexts.appended(session_id, mode, surface, ReplayRow(index, role, content, tool_call_id, name))
        return index

    async def update_text(
        self, session_id: str, index: int, content: str, *, complete: bool, mode: SessionMode = SessionMode.DURABLE
    ) -> None:
        """Checkpoint the text streamed so far into row `index` (R-ACP-4: called every <= 0.25 s and at tool
        boundaries). The row keeps its index; only content and `complete` change."""
        check_choice("mode", mode, MODES)
        content = clip(content)
        now = utcnow()
        checkpoint, activity = TextCheckpoint(mode, session_id, index, content, complete, now), Activity(mode, now)
        await self._units.write(
            "update_text", session_id, lambda _: activity, self._units.backend.update_text, checkpoint
        )
        self._units.contexts.updated(session_id, mode, index, content)

    async def finish_turn(
        self,
        session_id: str,
        turn_id: str,
        stop_reason: str,
        *,
        mode: SessionMode = SessionMode.DURABLE,
        usage: UsageRecord | None = None,
    ) -> None:
        """The turn reached a terminal state: its rows are complete and recovery leaves it alone. `usage`, what it
        cost (R-MODEL-5), is stored in the same transaction.

        Idempotent; the first stop reason wins (a turn already ended by recovery stays "interrupted").
        """
        check_choice("mode", mode, MODES)
        check_id("turn_id", turn_id, MAX_TURN_ID_LEN)
        check_id("stop_reason", stop_reason, 32)
        now = utcnow()
        ending, activity = TurnEnding(mode, session_id, turn_id, stop_reason, now), Activity(mode, now)
        unit = self._units.backend.finish_turn
        if usage is not None:
            unit = partial(_finish_with_usage, unit, usage)
        await self._units.write("finish_turn", session_id, lambda _: activity, unit, ending)

    async def messages(
        self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE, limit: int = 100, before: int | None = None
    ) -> tuple[builtins.list[TranscriptRow], int]:
        """The last `limit` rows with index < `before`, ascending, and the total row count (`session/messages`).

        Readable whatever the session's state, killed included (R-ACP-9).
        """
        if limit < 0 or (before is not None and before < 0):
            raise ValueError("limit and before must be >= 0")
        check_choice("mode", mode, MODES)
        return await self._units.db.read(self._units.backend.messages, mode, session_id, limit, before)

    async def messages_and_turn_ends(
        self, session_id: str, *, mode: SessionMode = SessionMode.DURABLE, limit: int = 100, before: int | None = None
    ) -> tuple[builtins.list[TranscriptRow], int, builtins.list[TurnEnd]]:
        """`messages`, plus how each turn whose last row is in that page ended: its last row's index and its stop
        reason, ascending (`session/messages` with `turnEnds`, issue 29 §4.9). One more query, in the same read.

        Turns still running are not listed; chat sessions record no turns, so theirs is always empty.
        """
        if limit < 0 or (before is not None and before < 0):
            raise ValueError("limit and before must be >= 0")
        check_choice("mode", mode, MODES)
        unit = self._units.backend.messages_and_turn_ends
        return await self._units.db.read(unit, mode, session_id, limit, before)

    # -- retained context --------------------------------------------------------------------------

    async def save_snapshot(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        boundary: int,
        *,
        surface: Surface | None = None,
        mode: SessionMode = SessionMode.DURABLE,
    ) -> int:
        """Commit a retained-context snapshot and the transcript boundary it covers, together (R-ACP-2); a chat
        session's goes to its own table (R-MULTI-5).

        `boundary` is the last transcript index the snapshot accounts for (`RecoveredContext.covers` of the
        context it was trimmed from); `surface` defaults to the session's own. Returns the snapshot id. If this
        raises, nothing changed, the previous snapshot still rules and `history_trimmed` must not be sent.
        System prompts and hidden reasoning are dropped before storing (R-ACP-3).
        """
        payload = orjson.dumps(replay.sanitize_snapshot(messages)).decode()
        if surface is not None:
            check_choice("surface", surface, SURFACES)
        check_choice("mode", mode, MODES)
        snapshot = NewSnapshot(mode, session_id, payload, boundary, surface, SNAPSHOTS_KEPT)
        unit = self._units.backend.save_snapshot
        snapshot_id, chosen = await self._units.write("save_snapshot", session_id, lambda _: UNCHANGED, unit, snapshot)
        self._units.contexts.snapshot_saved(session_id, mode, chosen, (snapshot_id, boundary, payload))
        return snapshot_id

    async def context(
        self, session_id: str, *, surface: Surface = "rpc", mode: SessionMode = SessionMode.DURABLE
    ) -> RecoveredContext:
        """The model context: the latest snapshot of `surface` plus the rows after its boundary (R-ACP-5), or
        the legacy provider-safe replay without one (R-ACP-6). Rows of another surface are ignored (R-ACP-7).

        Raises SessionKilled: a tombstone is never rehydrated (R-ACP-9).
        """
        check_choice("surface", surface, SURFACES)
        check_choice("mode", mode, MODES)
        key = (session_id, mode, surface)
        entry = self._units.contexts.get(key)
        if entry is None:
            version = self._units.contexts.version(session_id)
            snapshot, next_index, rows = await self._units.db.read(
                self._units.backend.context_rows, mode, session_id, surface
            )
            entry = self._units.contexts.fill(key, version, snapshot, next_index, rows)
        snapshot = entry.snapshot
        if entry.messages is None:
            if snapshot is not None and entry.prefix is None:
                entry.prefix = orjson.loads(snapshot[2])
            entry.messages = replay.rebuild(entry.prefix, entry.rows)
        return RecoveredContext(
            messages=list(entry.messages),
            snapshot_id=None if snapshot is None else snapshot[0],
            boundary=-1 if snapshot is None else snapshot[1],
            replayed_rows=len(entry.rows),
            next_index=entry.next_index,
            covers=entry.next_index - 1,
        )

    async def recover_interrupted(self, session_id: str, *, surface: Surface = "rpc") -> bool:
        """Repair turns the daemon did not finish (R-ACP-5); True when it appended the interruption marker.

        Only turns and rows of `surface` are considered; others stay as checkpointed (R-ACP-7). Their rows keep
        the text they had and become complete, the turns end as "interrupted", and ONE marker row follows.
        A second call finds nothing open and adds nothing. Call it only while no live turn runs.
        """
        check_choice("surface", surface, SURFACES)

        def unit(s: Session) -> bool:
            session = load_session(s, SessionMode.DURABLE, session_id)
            check_resumable(session, SessionMode.DURABLE)
            marker_turn = close_open_turns(s, session_id, surface)
            if marker_turn is None:
                return False
            add_row(
                s, session, SessionMode.DURABLE, role="marker", content=INTERRUPTED_TEXT, tool_call_id=None, name=None,
                marker=MARKER_INTERRUPTED, turn_id=marker_turn, surface=surface, complete=True,
            )  # fmt: skip
            return True

        return await self._units.write("recover", session_id, None, unit)


def _finish_with_usage(finish: Any, usage: UsageRecord, s: Session, ending: TurnEnding) -> None:
    finish(s, ending)
    add_usage(s, ending.mode, ending.session_id, usage, ending.at)


def _appended(mode: SessionMode, now: datetime, title: str | None, index: int) -> Activity:
    return Activity(mode, now, message_count=index + 1, title=title)
