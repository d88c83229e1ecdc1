"""Where a turn's `session/update` events go: the prompting receiver and the owner's watchers (R-STREAM).

Events reach every recipient in the order they are emitted (R-STREAM-2). The recipient list is cached and
recomputed only when the session's watchers change, so a watcher that attaches mid-turn gets the rest of it,
and one that went away stops receiving while the turn goes on.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.sessions.events import SessionEvent
from app.sessions.live import LiveSession, UpdateSink

__all__ = ["TurnUpdates"]


class TurnUpdates:
    def __init__(self, live: LiveSession, prompter: UpdateSink | None) -> None:
        self._live = live
        self._prompter = prompter
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
        if self._version != live.watch_version:
            self._recipients, self._version = live.sinks_for(self._prompter), live.watch_version
        for target in self._recipients:
            try:
                await target.send_updates(events)
            except Exception:  # a receiver that went away stops receiving; the turn goes on
                if target is self._prompter:
                    self._prompter = None
                live.unwatch(target)
