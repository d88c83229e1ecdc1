"""Where a turn's `session/update` events go: the prompting receiver and every attached watcher (R-STREAM, R-MULTI).

Each event is numbered as it is sent (`seq`, R-MULTI-1) and kept in the session's replay buffer for
`session/attach` (R-MULTI-2). Numbering, keeping and choosing recipients happen with no await between them, so a
client attaching at any moment gets each event exactly once: replayed, or sent live. Events reach every recipient
in the order they are emitted (R-STREAM-2). The recipient list is cached and recomputed only when the session's
watchers change, so a watcher that attaches mid-turn gets the rest of it, and one that went away stops receiving
while the turn goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from app.sessions.events import SessionEvent
from app.sessions.live import LiveSession, UpdateSink

__all__ = ["SEQ_BLOCK", "TurnUpdates"]

# Seqs reserved in storage at a time: one write per this many events, and what a crash may skip.
SEQ_BLOCK = 4096


class TurnUpdates:
    def __init__(
        self, live: LiveSession, prompter: UpdateSink | None, reserve: Callable[[int], Awaitable[None]]
    ) -> None:
        self._live = live
        self._prompter = prompter
        self._reserve = reserve  # stores a reservation of seqs up to the given one (`live.seq_reserved`)
        self._recipients: list[UpdateSink] = []
        self._version = -1

    async def emit(self, event: SessionEvent) -> None:
        """One update (`app.sessions.events`: its session id, `type` and fields)."""
        await self._send([event])

    async def text(self, chunks: Sequence[str]) -> None:
        """One `agent_message_chunk` update per chunk, sent as one batch."""
        sid = self._live.session_id
        await self._send([{"session_id": sid, "type": "agent_message_chunk", "text": chunk} for chunk in chunks])

    async def _send(self, events: list[SessionEvent]) -> None:
        live = self._live
        if live.seq + len(events) > live.seq_reserved:
            await self._reserve(live.seq + len(events) + SEQ_BLOCK)
        seq = live.seq
        for event in events:
            seq += 1
            event["seq"] = seq
        live.seq = seq
        live.retained.extend(events)
        if self._version != live.watch_version:
            self._recipients, self._version = live.sinks_for(self._prompter), live.watch_version
        for target in self._recipients:
            try:
                await target.send_updates(events)
            except Exception:  # a receiver that went away stops receiving; the turn goes on
                if target is self._prompter:
                    self._prompter = None
                live.unwatch(target)
