"""The ACP wire (SPEC §19, R-EDIT-1..6): our events as Agent Client Protocol v1 updates, and its marker.

A connection speaks it when `initialize` says so: the `zeroclaw acp` bridge marks the editor's `initialize` with
`_meta["zeroclaw.acp"]` (`speaks_acp`), and the gateway's `/acp` route marks its peers (`Peer.acp`). From then on
this module shapes what goes in and out, and the standard handlers run the calls:

* `session/update` events become ACP `SessionUpdate`s (`acp_update`): text and thought chunks, `tool_call` and
  `tool_call_update`; `user_message` (a steer) ACP's `user_message_chunk`; `usage` ACP's `usage_update`
  (R-MODEL-5); `history_trimmed` the extension notification `_zeroclaw/history_trimmed`; `turn_complete` is the
  prompt's answer and no update; events this dialect does not know (`approval_resolved`) send nothing;
* an `approval_request` becomes the daemon→client request `session/request_permission` (`rpc.dialects.acp.peer`);
* the methods (`adapt`, `own_method`) are `rpc.dialects.acp.methods`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpc.core.envelope import encode_notifications

__all__ = [
    "HISTORY_TRIMMED",
    "MARKER",
    "acp_update",
    "encode",
    "speaks_acp",
    "text_update",
    "tool_call_start",
    "tool_call_update",
    "usage_update",
]

MARKER = "zeroclaw.acp"  # the `_meta` key of an `initialize` the bridge relays (docs/acp.md)
HISTORY_TRIMMED = "_zeroclaw/history_trimmed"

# Our tools as ACP's `ToolKind`, and the argument shown as the call's title.
_KINDS = {"bash": "execute", "read_file": "read", "write_file": "edit"}
_TITLE_ARGUMENT = {"bash": "command", "read_file": "path", "write_file": "path", "ask_user": "question"}
# Results of calls that did not run: rejected (once, or for the session), denied by a rule (R-GUARD-2), unknown.
_FAILED_PREFIXES = ("The user rejected this ", "The user rejected every ", "Denied by the ", "Unknown tool ")


def speaks_acp(raw_params: object) -> dict[str, Any] | None:
    """The marker of an ACP `initialize` (`{"agent": ALIAS}` or `{}`), or None for any other."""
    if not isinstance(raw_params, Mapping):
        return None
    meta = raw_params.get("_meta")
    marker = meta.get(MARKER) if isinstance(meta, Mapping) else None
    return dict(marker) if isinstance(marker, Mapping) else None


def tool_call_start(session_id: str, tool_call_id: str, name: str, raw_input: Any) -> dict[str, Any]:
    """`tool_call` (R-EDIT-5): the command or path as its title, our tool as ACP's kind."""
    argument = _TITLE_ARGUMENT.get(name)
    shown = raw_input.get(argument) if argument is not None and isinstance(raw_input, Mapping) else None
    return {
        "sessionId": session_id,
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": shown if isinstance(shown, str) and shown else name,
            "kind": _KINDS.get(name, "other"),
            "status": "pending",
            "rawInput": raw_input,
        },
    }


def tool_call_update(session_id: str, tool_call_id: str, output: str) -> dict[str, Any]:
    """`tool_call_update` with the tool's result: failed when it did not run."""
    failed = output.startswith(_FAILED_PREFIXES)
    return {
        "sessionId": session_id,
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": "failed" if failed else "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": output}}],
            "rawOutput": output,
        },
    }


def usage_update(event: Mapping[str, Any]) -> dict[str, Any]:
    """ACP's `usage_update` (R-MODEL-5): `used`, the tokens the step's context held (its input, cached or not, and
    its output); `size`, the context window, 0 while the model's is unknown; `cost`, the session's running cost
    when its provider is priced. The step's own counts ride in `_meta["zeroclaw.usage"]`."""
    update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": event["context_tokens"], "size": 0}
    if event["session_cost_usd"] is not None:
        update["cost"] = {"amount": event["session_cost_usd"], "currency": "USD"}
    update["_meta"] = {
        "zeroclaw.usage": {
            "inputTokens": event["input_tokens"],
            "outputTokens": event["output_tokens"],
            "cacheReadTokens": event["cache_read_tokens"],
            "cacheWriteTokens": event["cache_write_tokens"],
            "costUsd": event["cost_usd"],
        }
    }
    return {"sessionId": event["session_id"], "update": update}


def text_update(session_id: str, kind: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}


def acp_update(event: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """One of our events as an ACP notification (method, params); None when it is no update in ACP."""
    kind, session_id = event["type"], event["session_id"]
    if kind in ("agent_message_chunk", "agent_thought_chunk"):
        return "session/update", text_update(session_id, kind, event["text"])
    if kind == "user_message":  # a steer joined the turn (R-BRANCH-3): ACP's user chunk, as session/load replays it
        return "session/update", text_update(session_id, "user_message_chunk", event["text"])
    if kind == "tool_call":
        return "session/update", tool_call_start(session_id, event["tool_call_id"], event["name"], event["raw_input"])
    if kind == "tool_result":
        return "session/update", tool_call_update(session_id, event["tool_call_id"], event["raw_output"])
    if kind == "usage":
        return "session/update", usage_update(event)
    if kind == "history_trimmed":
        trimmed = {
            "sessionId": session_id,
            "droppedMessages": event["dropped_messages"],
            "keptMessages": event["kept_messages"],
            "keptTurns": event["kept_turns"],
            "reason": event["reason"],
        }
        return HISTORY_TRIMMED, trimmed
    return None  # turn_complete (the prompt's answer), approval_resolved, and what comes later


def encode(events: Sequence[Mapping[str, Any]]) -> list[bytes]:
    frames: list[bytes] = []
    for event in events:
        update = acp_update(event)
        if update is not None:
            frames.extend(encode_notifications(update[0], [update[1]]))
    return frames
