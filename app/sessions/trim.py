"""Automatic trimming of the retained provider context (R-ACP-1): the transcript is never touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Trimmed", "trim_context"]


@dataclass(frozen=True, slots=True)
class Trimmed:
    kept: list[dict[str, Any]]
    dropped: int


def _size(message: Mapping[str, Any]) -> int:
    size = len(message.get("content") or "")
    if message.get("tool_calls"):
        size += len(orjson.dumps(message["tool_calls"]))
    return size


def trim_context(messages: Sequence[Mapping[str, Any]], max_messages: int, max_chars: int) -> Trimmed | None:
    """Drop the oldest messages until both limits hold; None when nothing needs dropping.

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
    start = starts[-1]
    for candidate in starts:
        if len(messages) - candidate <= max_messages and sum(sizes[candidate:]) <= max_chars:
            start = candidate
            break
    if start == 0:
        return None
    return Trimmed([dict(m) for m in messages[start:]], start)
