"""Pure functions that turn stored rows and snapshots into provider context (R-ACP-3, R-ACP-5, R-ACP-6).

Messages are plain dicts in OpenAI chat shape:
    {"role": "user", "content": "..."}
    {"role": "assistant", "content": "...", "tool_calls": [{"id", "type": "function", "function": {name, arguments}}]}
    {"role": "tool", "tool_call_id": "...", "name": "...", "content": "..."}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["Replayable", "provider_safe", "rebuild", "rows_to_messages", "sanitize_snapshot"]


class Replayable(Protocol):
    """What replay reads of a transcript row (`TranscriptRow`, or the store's cached `ReplayRow`)."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...


# Keys some providers use for hidden reasoning; a snapshot never keeps them (R-ACP-3).
_REASONING_KEYS = frozenset({"reasoning", "reasoning_content", "thinking", "thought"})


def sanitize_snapshot(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What a snapshot may hold: no system prompts and no hidden reasoning (R-ACP-3), whatever the caller sent.

    Enforced here rather than trusted to the turn runner, so a provider adapter that echoes reasoning back can
    never make it durable.
    """
    kept: list[dict[str, Any]] = []
    for message in messages:
        # `type(...) is` first: an ABC isinstance per message is slow (docs/sessions-storage.md).
        if type(message) is not dict and not isinstance(message, Mapping):
            raise ValueError("snapshot messages must be objects with a string 'role'")
        role = message.get("role")
        if not isinstance(role, str):
            raise ValueError("snapshot messages must be objects with a string 'role'")
        if role in ("system", "developer"):
            continue
        if _REASONING_KEYS.isdisjoint(message):
            kept.append(dict(message))
        else:
            kept.append({key: value for key, value in message.items() if key not in _REASONING_KEYS})
    return kept


def rows_to_messages(rows: Iterable[Replayable]) -> list[dict[str, Any]]:
    """Transcript rows as provider messages; markers and thoughts are never sent (R-ACP-5, R-ACP-3).

    Consecutive tool_call rows join the assistant message just before them (parallel calls in one message), as
    the provider produced them.
    """
    out: list[dict[str, Any]] = []
    for row in rows:
        if row.role == "user":
            out.append({"role": "user", "content": row.content})
        elif row.role == "assistant":
            out.append({"role": "assistant", "content": row.content})
        elif row.role == "tool_call":
            call = {
                "id": row.tool_call_id,
                "type": "function",
                "function": {"name": row.name or "", "arguments": row.content},
            }
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif row.role == "tool_result":
            out.append(
                {"role": "tool", "tool_call_id": row.tool_call_id, "name": row.name or "", "content": row.content}
            )
        # "marker" and "thought" rows: visible history only.
    return out


def provider_safe(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Drop tool calls that have no result and results that answer no call (R-ACP-6).

    Providers reject an assistant `tool_calls` entry that is not answered by a tool message, and a tool message
    that answers nothing; an interrupted turn leaves exactly that behind. Empty assistant messages left over
    are dropped too.
    """
    # A result answers the latest unanswered earlier call with its id: ids repeat across turns, and an
    # interrupted call must not borrow a later call's result.
    pending: dict[str, tuple[int, int]] = {}
    answered: set[tuple[int, int]] = set()
    answering: set[int] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            for j, call in enumerate(message.get("tool_calls") or ()):
                call_id = _call_id(call)
                if call_id:
                    pending[call_id] = (i, j)
        elif role == "tool":
            answer = pending.pop(message.get("tool_call_id") or "", None)
            if answer is not None:
                answered.add(answer)
                answering.add(i)

    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            listed = message.get("tool_calls")
            calls = [call for j, call in enumerate(listed) if (i, j) in answered] if listed and answered else None
            if calls:
                copy = dict(message)
                copy["tool_calls"] = calls
            elif not message.get("content"):
                continue
            else:
                copy = dict(message)
                copy.pop("tool_calls", None)
            out.append(copy)
        elif role != "tool" or i in answering:
            out.append(dict(message))
    return out


def rebuild(snapshot: Sequence[Mapping[str, Any]] | None, rows: Iterable[Replayable]) -> list[dict[str, Any]]:
    """Snapshot (if any, even empty: R-ACP-6) plus the rows after its boundary, made provider-safe (R-ACP-5)."""
    return provider_safe([*(snapshot or ()), *rows_to_messages(rows)])


def _call_id(call: Any) -> str:
    if isinstance(call, Mapping) and isinstance(call.get("id"), str):
        return str(call["id"])
    return ""
