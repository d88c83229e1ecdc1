"""Where a turn's `session/update` events go: the prompting receiver and every attached watcher (R-STREAM, R-MULTI).

Each event is numbered as it is sent (`seq`, R-MULTI-1) and kept in the session's replay buffer (R-MULTI-2). The
receiver that prompted is sent each batch here, so its backpressure paces the turn (R-LIM); every other watcher is
fed from the buffer by its own `Follower` (`app.sessions.live.follow`), so a slow one slows nobody. Numbering, keeping
and waking the followers happen with no await between them: a client attaching at any moment gets each event
exactly once, replayed or live, in the order emitted (R-STREAM-2).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from itertools import repeat

from app.sessions.events import SessionEvent
from app.sessions.live.session import LiveSession
from app.sessions.live.sink import UpdateSink

__all__ = ["SEQ_BLOCK", "TurnUpdates"]

# Seqs reserved in storage at a time: one write per this many events, and what a crash may skip.
SEQ_BLOCK = 65_536


class TurnUpdates:
    """A turn's updates on their way out: numbered, kept for replay, sent to the prompter (which paces the


    turn) and handed to every other watcher's follower, with no await in between (R-STREAM-2)."""

    def __init__(
        self,
        live: LiveSession,
        prompter: UpdateSink | None,
        reserve: Callable[[int], Awaitable[None]],
        encode: Callable[[Sequence[SessionEvent]], list[bytes]] | None = None,
    ) -> None:
        self._live = live
        self._prompter = prompter
        self._reserve = reserve  # stores a reservation of seqs up to the given one (`live.seq_reserved`)
        self._encode = encode  # standard-dialect frames, made once when several receivers share them

    async def emit(self, event: SessionEvent) -> None:
        """One update (`app.sessions.events`: its session id, `type` and fields)."""
        before = await self._number(1)
        event["seq"] = before + 1
        await self._send([event], before)

    async def text(self, chunks: Sequence[str]) -> None:
        """One `agent_message_chunk` update per chunk, sent as one batch (numbered as they are made: the hot
        path of a streaming turn, benchmarks/run.py)."""
        sid, before = self._live.session_id, await self._number(len(chunks))
        events: list[SessionEvent] = [
            {"session_id": sid, "type": "agent_message_chunk", "text": chunk, "seq": seq}
            for seq, chunk in zip(range(before + 1, before + 1 + len(chunks)), chunks, strict=True)
        ]
        await self._send(events, before)

    async def _number(self, count: int) -> int:
        """Take the next `count` seqs, reserved in storage first; returns the last seq before them."""
        live = self._live
        before = live.seq
        if before + count > live.seq_reserved:
            await self._reserve(before + count + SEQ_BLOCK)
            before = live.seq  # nothing else numbers this session's updates meanwhile: the same value
        live.seq = before + count
        return before

    async def _send(self, events: list[SessionEvent], before: int) -> None:
        live, seq = self._live, self._live.seq
        live.retained.extend(events)
        prompter = self._prompter
        watchers = live.watchers
        own = watchers.get(prompter) if prompter is not None else None
        # Encoded once here when others follow, not once per receiver (benchmarks/attach_bench.py).
        encode = self._encode
        frames = encode(events) if encode is not None and len(watchers) > (own is not None) else None
        live.frames.extend(frames if frames is not None else repeat(None, len(events)))
        if own is not None and own.cursor == before:
            own.cursor = seq  # sent below, in step with the turn
        for follower in list(watchers.values()):
            follower.poke(live)
        if prompter is None or (own is not None and own.cursor != seq):
            return  # no prompter, or one still behind on earlier updates: its follower sends these too
        try:
            await prompter.send_updates(events, frames)
        except Exception:  # a receiver that went away stops receiving; the turn goes on
            self._prompter = None
            live.unwatch(prompter)
