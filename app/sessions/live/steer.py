"""Steering a running turn (R-BRANCH-3): texts that join the turn as user messages at its next provider step.

`session/steer` offers a text to the running turn's `SteerInbox`; the turn takes what waits at the start of each
provider step (`join_steers`: after the current stream or tool calls, never between a call and its result), stores
each as a user row of the turn, announces it as `user_message` and gives it to the model. The offer's answer is the
row's index, or None when the turn ended before taking it (the inbox is closed when the turn's body ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from app.agents.base import Message

if TYPE_CHECKING:
    from app.sessions.live.turn_settings import Updates
    from app.sessions.store.transcript import Transcript

__all__ = ["SteerInbox", "join_steers"]


class SteerInbox:
    """The texts waiting to join one turn, each with the future its offer answers with (index, or None)."""

    def __init__(self) -> None:
        self._waiting: list[tuple[str, asyncio.Future[int | None]]] = []
        self._closed = False

    @property
    def pending(self) -> bool:
        return bool(self._waiting)

    def offer(self, text: str) -> asyncio.Future[int | None]:
        """`text` joins at the turn's next step; the future answers with its row's index, or None if it never did."""
        answer: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        if self._closed:
            answer.set_result(None)
        else:
            self._waiting.append((text, answer))
        return answer

    def take(self) -> list[tuple[str, asyncio.Future[int | None]]]:
        taken, self._waiting = self._waiting, []
        return taken

    def close(self) -> None:
        """The turn's body ended: what still waits was not taken (accepted:false), and nothing joins any more."""
        self._closed = True
        for _text, answer in self.take():
            if not answer.done():
                answer.set_result(None)


async def join_steers(
    inbox: SteerInbox,
    session_id: str,
    messages: list[Message],
    store: Transcript,
    updates: Updates,
    row: Callable[..., dict[str, Any]],
) -> None:
    """Each waiting text as a user row of the turn (stored first), a `user_message` update and a model message."""
    taken = inbox.take()
    try:
        for text, answer in taken:
            index = await _stored(store.append(session_id, **row(role="user", content=text)), answer)
            messages.append(Message(role="user", content=text))
            answer.set_result(index)  # answered once the update below is sent: the same task, no await between
            await updates.emit({"session_id": session_id, "type": "user_message", "text": text, "index": index})
    finally:
        for _text, answer in taken:
            if not answer.done():
                answer.set_result(None)  # not stored (a storage fault): not taken


async def _stored(append: Coroutine[Any, Any, int], answer: asyncio.Future[int | None]) -> int:
    """The row's index. Should the turn be cancelled while the row is written, the write still finishes (the
    writer thread commits it regardless) and the offer is answered with its index, not "not taken": what the
    steering client is told matches what is stored."""
    write = asyncio.ensure_future(append)
    try:
        return await asyncio.shield(write)
    except asyncio.CancelledError:
        with suppress(Exception):
            answer.set_result(await write)  # the cancellation was delivered: awaiting the write is allowed again
        raise
