"""Automatic trimming of the retained provider context (R-ACP-1): the transcript is never touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = ["TRIM_TO", "Trimmed", "trim_context"]

# A trim cuts to this share of each limit, so that the next one is a quarter of the limit away
# (docs/durability.md, "Trimming").
TRIM_TO: Final = 0.75


# `history_trimmed.reason`, in ZeroClaw's words (ours counts characters).
MESSAGE_LIMIT: Final = "history message limit exceeded"
CHARACTER_LIMIT: Final = "context character budget exceeded"


@dataclass(frozen=True, slots=True)
class Trimmed:
    """A trimmed context: the messages kept, how many were dropped and which limit asked for it."""

    kept: list[dict[str, Any]]
    dropped: int
    reason: str = MESSAGE_LIMIT


def _size(message: Mapping[str, Any]) -> int:
    size = len(message.get("content") or "")
    if message.get("tool_calls"):
        size += len(orjson.dumps(message["tool_calls"]))
    return size


def trim_context(messages: Sequence[Mapping[str, Any]], max_messages: int, max_chars: int) -> Trimmed | None:
    """None while both limits hold; once one is exceeded, drop the oldest messages until what is left fits in
    `TRIM_TO` of each limit.

    The kept context always starts at a user message, so no tool result loses the call it answers. When even
    the newest exchange is over a limit, that exchange is kept whole: a model with no question is useless.
    """
    sizes = [_size(m) for m in messages]
    total = sum(sizes)
    if len(messages) <= max_messages and total <= max_chars:
        return None
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not starts:
        return None
    keep_messages, keep_chars = int(max_messages * TRIM_TO), int(max_chars * TRIM_TO)
    start, dropped_chars, counted = starts[-1], 0, 0
    for candidate in starts:
        dropped_chars += sum(sizes[counted:candidate])
        counted = candidate
        if len(messages) - candidate <= keep_messages and total - dropped_chars <= keep_chars:
            start = candidate
            break
    if start == 0:
        return None
    reason = MESSAGE_LIMIT if len(messages) > max_messages else CHARACTER_LIMIT
    return Trimmed([dict(m) for m in messages[start:]], start, reason)
