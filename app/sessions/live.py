"""A live session: what exists in memory while a session is open (its owner, agent, running turn, watchers)."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from app.sessions.events import SessionEvent
from app.sessions.store_types import Mode, Surface

__all__ = ["Approval", "LiveSession", "Mode", "UpdateSink"]


@dataclass(frozen=True, slots=True)
class Approval:
    """A client's answer to an `approval_request`: a decision, and for `reject_with_edit` what to do instead."""

    decision: str
    replacement: str | None = None


_generations = itertools.count(1)


class UpdateSink(Protocol):
    """Somewhere `session/update` notifications go (a connection, a gateway chat stream, a test)."""

    @property
    def principal_id(self) -> str | None: ...  # read only: whose updates these are

    @property
    def closed(self) -> bool: ...

    async def send_updates(self, updates: Sequence[SessionEvent]) -> None:
        """Deliver updates in order; waits while the receiver is slow; raises if it is gone."""
        ...


@dataclass(eq=False)
class LiveSession:
    session_id: str
    owner: str
    agent_alias: str
    mode: Mode
    workspace: Path
    surface: Surface
    # A closed and recreated session with the same id is a different session (R-FILE-6).
    generation: int = field(default_factory=lambda: next(_generations))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turn: asyncio.Task[Any] | None = None  # the whole turn, including its terminal rows and updates
    body: asyncio.Task[Any] | None = None  # the provider/tool part; `session/cancel` cancels this one
    watchers: set[UpdateSink] = field(default_factory=set)
    watch_version: int = 0  # moves when `watchers` changes, so a turn can cache its recipients
    approvals: dict[str, asyncio.Future[Approval]] = field(default_factory=dict)
    always_allowed: set[str] = field(default_factory=set)
    # Who cancelled the turn, in ZeroClaw's words: `client_rpc`, `admin_kill`, `session_removed`.
    cancel_cause: str | None = None
    # A client's variables for this session's commands, over the bash tool's environment (R-ZC-6).
    tool_env: Mapping[str, str] | None = None
    # R-MULTI-1: the last `seq` sent, and the highest one stored as reserved (a crash never reuses a seq).
    seq: int = 0
    seq_reserved: int = 0
    # R-MULTI-2: the latest events, for `session/attach` to replay (`[limits] replay_events` of them).
    retained: deque[SessionEvent] = field(default_factory=deque)
    # Approval ids count on from the stored seq, so an id is never given twice to one session, even across
    # restarts: every approval took one seq before (R-MULTI-3: a late answer is told it came late).
    next_request: int = field(init=False)

    def __post_init__(self) -> None:
        self.next_request = self.seq + 1

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def next_request_id(self) -> str:
        number, self.next_request = self.next_request, self.next_request + 1
        return f"ap_{number}"

    def was_asked(self, request_id: str) -> bool:
        """`request_id` names an approval this session asked for at some time (pending or long settled)."""
        number = request_id.removeprefix("ap_")
        return number != request_id and number.isdecimal() and 0 < int(number) < self.next_request

    def events_after(self, seq: int) -> list[SessionEvent] | None:
        """The retained events after `seq`, in order; None when some of them are no longer retained."""
        retained = self.retained
        if seq >= self.seq:
            return []
        if not retained or retained[0]["seq"] > seq + 1:
            return None
        start = seq + 1 - retained[0]["seq"]
        return list(itertools.islice(retained, start, None))

    def watch(self, sink: UpdateSink) -> None:
        self.watchers.add(sink)
        self.watch_version += 1

    def unwatch(self, sink: UpdateSink) -> None:
        self.watchers.discard(sink)
        self.watch_version += 1

    def sinks_for(self, prompter: UpdateSink | None) -> list[UpdateSink]:
        """The prompting receiver plus every open watcher (R-STREAM, R-MULTI-2: whoever prompted; only the owner or
        an admin can have attached)."""
        for gone in [w for w in self.watchers if w.closed]:
            self.unwatch(gone)
        sinks = [prompter] if prompter is not None and not prompter.closed else []
        sinks.extend(w for w in self.watchers if w is not prompter)
        return sinks
