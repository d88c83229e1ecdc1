"""A live session: what exists in memory while a session is open (its owner, agent, running turn, watchers)."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.sessions.events import SessionEvent
from app.sessions.live.follow import Follower
from app.sessions.live.sink import UpdateSink
from app.sessions.live.steer import SteerInbox
from app.sessions.mode import SessionMode
from app.sessions.store.types import Surface

__all__ = ["Approval", "LiveSession"]


@dataclass(frozen=True, slots=True)
class Approval:
    """A client's answer to an `approval_request`: a decision, and for `reject_with_edit` what to do instead."""

    decision: str
    replacement: str | None = None
    # With `allow_always`: "agent" stores an allow rule for the owner and agent (R-GUARD-3), of `pattern` when
    # given, else of the exact command or path; None keeps it for this session (as before).
    remember: str | None = None
    pattern: str | None = None


_generations = itertools.count(1)


@dataclass(eq=False)
class LiveSession:
    """A session in memory: who owns it, its turn, its watchers, its update numbering and replay buffer.
    The lifecycle (`app.sessions.lifecycle`) brings it up and lets it go; its turns run in `app.sessions.live.turns`."""

    session_id: str
    owner: str
    agent_alias: str
    mode: SessionMode
    workspace: Path
    surface: Surface
    # A closed and recreated session with the same id is a different session (R-FILE-6).
    generation: int = field(default_factory=lambda: next(_generations))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turn: asyncio.Task[Any] | None = None  # the whole turn, including its terminal rows and updates
    body: asyncio.Task[Any] | None = None  # the provider/tool part; `session/cancel` cancels this one
    # R-BRANCH-3: what `session/steer` offered the running turn (a new inbox per turn, closed when its body ends).
    steers: SteerInbox = field(default_factory=SteerInbox)
    # Every attached receiver, with where it is in the updates (`app.sessions.live.follow`).
    watchers: dict[UpdateSink, Follower] = field(default_factory=dict)
    approvals: dict[str, asyncio.Future[Approval]] = field(default_factory=dict)
    always_allowed: set[str] = field(default_factory=set)
    always_rejected: set[str] = field(default_factory=set)  # tools answered `reject_always` (R-GUARD-3)
    # Who cancelled the turn, in ZeroClaw's words: `client_rpc`, `admin_kill`, `session_removed`.
    cancel_cause: str | None = None
    # A client's variables for this session's commands, over the bash tool's environment (R-ZC-6).
    tool_env: Mapping[str, str] | None = None
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)  # the session's own (R-MCP-2): name -> McpServer
    # R-MODEL-4: the model and temperature `session/configure` chose (stored too); None: the agent's own.
    model: str | None = None
    temperature: float | None = None
    # R-MULTI-1: the last `seq` sent, and the highest one stored as reserved (a crash never
    # reuses a seq).
    seq: int = 0
    seq_reserved: int = 0
    # R-MULTI-2: `seq` when the running (or last) turn began: its updates are those after it.
    turn_start_seq: int = 0
    # R-MULTI-2: the latest events, for `session/attach` to replay (`[limits] replay_events` of them).
    retained: deque[SessionEvent] = field(default_factory=deque)
    # Beside each retained update, its standard-dialect frame when it was encoded once for several
    # receivers (None when one receiver had it alone): followers then share one encoding.
    frames: deque[bytes | None] = field(default_factory=deque)
    # Approval ids count on from the stored seq, so an id is never given twice to one session,
    # even across restarts: every approval took one seq before (R-MULTI-3: a late answer is told
    # it came late).
    next_request: int = field(init=False)
    # R-MODEL-5: what the session's counted turns cost (None: unpriced), read from storage by its first turn here.
    usage_cost: float | None = None
    usage_cost_read: bool = False

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
        retained, missing = self.retained, self.seq - seq
        if missing <= 0:
            return []
        if missing > len(retained):
            return None
        tail = list(itertools.islice(reversed(retained), missing))  # from the newest end: O(missing)
        tail.reverse()
        return tail

    def frames_after(self, seq: int) -> list[bytes] | None:
        """The shared frames of the retained updates after `seq` (as `events_after`), when all of them have one."""
        missing = self.seq - seq
        if missing <= 0 or missing > len(self.frames):
            return None
        tail = list(itertools.islice(reversed(self.frames), missing))
        if None in tail:
            return None
        tail.reverse()
        return tail  # type: ignore[return-value]  # no None left

    def watch(self, sink: UpdateSink, after: int | None = None) -> None:
        """`sink` receives every update numbered after `after` (default: from now on), whoever prompts."""
        if sink not in self.watchers:
            follower = self.watchers[sink] = Follower(sink, self.seq if after is None else after)
            follower.poke(self)

    def unwatch(self, sink: UpdateSink) -> None:
        follower = self.watchers.pop(sink, None)
        if follower is not None:
            follower.stop()
