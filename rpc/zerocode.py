"""The zerocode dialect (SPEC §17, R-ZC-1..6): the wire of ZeroClaw 0.8.4, which its terminal client reads strictly.

A connection whose `initialize` has zerocode's own shape speaks it (`speaks_zerocode`). Nothing here runs a method:
the standard handlers do, and this module shapes what goes in and out, the way ZeroClaw 0.8.4's daemon does
(crates/zeroclaw-runtime/src/rpc/{types,dispatch}.rs at tag v0.8.4; the table is in docs/zerocode.md):

* results and `session/update` events use snake_case keys and ZeroClaw's fields (`RESULT_SHAPES`, `events`);
* `session/new` makes a chat session unless `chat_mode` says `acp`; `session/list` lists chat sessions and
  `session/list-acp` ACP ones; `session/prompt` answers `{}` (its text travels in `turn_complete`);
* `session/approve` also takes `reject_once` and `reject_with_edit` (with `replacement`), and acknowledges a request
  id it does not know, as ZeroClaw does;
* a question is a choice form (`oneOf` of `{const: "choice-<i>", title}`); a free-form one fails at once.
"""

from __future__ import annotations

import inspect
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import CoroutineType
from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
from msgspec import Meta
from msgspec.structs import replace

from app.sessions.errors import ApprovalNotFound
from rpc.dialect import Dialect, Question
from rpc.methods.session import Mode, NewParams
from rpc.registry import AfterReply, MethodSpec, Params, SessionId

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry
    from rpc.context import CallContext

__all__ = ["PROTOCOL_VERSION", "ZEROCODE", "new_tui_id", "speaks_zerocode"]

PROTOCOL_VERSION = 1  # ZeroClaw's own protocol number, the one zerocode sends
TUI_ID_CHARS = 64

# ZeroClaw's `turn_complete.outcome` for our stop reasons (out of steps still completed).
_OUTCOMES = {"end_turn": "completed", "max_turns": "completed", "cancelled": "cancelled", "failed": "failed"}


def speaks_zerocode(raw_params: object) -> bool:
    """R-ZC-1: zerocode's own `initialize` shape, the version spelled `protocol_version` together with its `env`
    object or a `tui_id`. A client that merely writes `protocol_version` keeps the standard dialect."""
    if not isinstance(raw_params, Mapping) or "protocol_version" not in raw_params:
        return False
    return isinstance(raw_params.get("env"), Mapping) or isinstance(raw_params.get("tui_id"), str)


def new_tui_id() -> str:
    """A terminal's identity, spelled as ZeroClaw spells it (`tui_` and 8 hex digits)."""
    return f"tui_{secrets.token_hex(4)}"


def default_config_kind(config_dir: Path) -> str:
    """ZeroClaw's `config_kind`: the usual `~/.zeroclaw`, or a directory chosen by flag or environment."""
    home = Path(os.environ.get("HOME") or Path.home())
    return "default" if config_dir == home / ".zeroclaw" else "custom"


# -- params zerocode sends differently


class ZeroCodeNewParams(NewParams, frozen=True):
    """`session/new`: `chat_mode` defaults to chat (rt:dispatch.rs:1016-1019)."""

    mode: Mode = "chat"


class ZeroCodeApproveParams(Params, frozen=True):
    """`session/approve` with ZeroClaw's decisions (rt:types.rs:1214-1230): `reject_once` is `reject`;
    `reject_with_edit` carries what the user wants instead (`replacement`)."""

    session_id: SessionId
    request_id: Annotated[str, Meta(min_length=1, max_length=64)]
    decision: Literal["allow_once", "allow_always", "reject", "reject_once", "reject_with_edit"]
    replacement: Annotated[str, Meta(max_length=1_000_000)] | None = None


# -- results


def _snake_keys(result: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level keys only: the values are scalars in every result this is used for."""
    return {_snake(key): value for key, value in result.items()}


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _session_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One `session/list` / `session/list-acp` entry (rt:types.rs:264-295): the key of a chat session is its
    `rpc_` backend key, an ACP session's key is its id."""
    session_id = entry["session_id"]
    return {
        "session_id": session_id,
        "session_key": f"rpc_{session_id}" if entry["mode"] == "chat" else session_id,
        "created_at": entry["created_at"],
        "last_activity": entry["last_activity"],
        "message_count": entry["message_count"],
        "agent_alias": entry["agent_alias"],
    }


def _sessions(ctx: CallContext, params: Params, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"sessions": [_session_entry(entry) for entry in result["sessions"]]}


def _new_session(ctx: CallContext, params: Params, result: Mapping[str, Any]) -> dict[str, Any]:
    # rt:dispatch.rs:1328-1333
    return {key: result[key] for key in ("session_id", "agent_alias", "message_count", "workspace_dir")}


def _messages(ctx: CallContext, params: Params, result: Mapping[str, Any]) -> dict[str, Any]:
    # rt:dispatch.rs:2284-2363: `start` is the position of the first message returned.
    rows, total = result["messages"], result["total"]
    before = getattr(params, "before", None)
    start = rows[0]["index"] if rows else (total if before is None else min(before, total))
    return {
        "session_id": result["sessionId"],
        "messages": [{"role": row["role"], "content": row["content"]} for row in rows],
        "total": total,
        "start": start,
    }


def _status(ctx: CallContext, params: Params, result: object) -> dict[str, Any]:
    # rt:dispatch.rs:923-950: the daemon's own status (`Services.describe`) in ZeroClaw's fields.
    services = ctx.services
    status = services.describe()
    config_dir = services.paths.config_dir
    return {
        "server_version": services.config.compat.zerocode_version,
        "protocol_version": PROTOCOL_VERSION,
        "active_sessions": status.active_sessions,
        "session_ids": status.session_ids,
        "config_dir": str(config_dir),
        "config_file": status.config_file,
        "config_kind": default_config_kind(config_dir),
        "local_ipc_endpoint": status.endpoint,
    }


def _plain(ctx: CallContext, params: Params, result: Mapping[str, Any]) -> dict[str, Any]:
    return _snake_keys(result)


def _acknowledged(ctx: CallContext, params: Params, result: Mapping[str, Any]) -> dict[str, Any]:
    # rt:dispatch.rs:2447-2453: a stale request id is acknowledged all the same (a late one
    # too, R-MULTI-3).
    return {**_snake_keys(result), "acknowledged": True}


def _prompted(ctx: CallContext, params: Params, result: object) -> dict[str, Any]:
    return {}  # the final text travels in `turn_complete` (rt:dispatch.rs:703-720)


Shape = Callable[["CallContext", Params, Any], Any]

RESULT_SHAPES: dict[str, Shape] = {
    "status": _status,
    "session/new": _new_session,
    "session/prompt": _prompted,
    "session/cancel": _plain,
    "session/approve": _acknowledged,
    "session/list": _sessions,
    "session/list-acp": _sessions,
    "session/messages": _messages,
    "session/close": _plain,
    "session/kill": _plain,
    "session/delete": _plain,
}


# -- params


def _chat_sessions(params: Params) -> Params:
    # `session/list`: the chat sessions; `session/list-acp` lists the others (rt:dispatch.rs:2193-2282).
    return replace(params, mode="chat")


def _zeroclaw_decision(params: Params) -> Params:
    reject_once = getattr(params, "decision", None) == "reject_once"
    return replace(params, decision="reject") if reject_once else params


# The dialect's own params model of a method (None: the method's), and what to make of them.
PARAMS: dict[str, tuple[type[Params] | None, Callable[[Params], Params] | None]] = {
    "session/new": (ZeroCodeNewParams, None),
    "session/list": (None, _chat_sessions),
    "session/approve": (ZeroCodeApproveParams, _zeroclaw_decision),
}


def _acknowledge_unknown_request(ctx: CallContext, params: Params, exc: Exception) -> dict[str, Any]:
    # rt:dispatch.rs:2447-2453: a stale or unknown request id is acknowledged all the same.
    if not isinstance(exc, ApprovalNotFound) or not isinstance(params, ZeroCodeApproveParams):
        raise exc
    return {"session_id": params.session_id, "request_id": params.request_id, "acknowledged": True}


ERRORS: dict[str, Callable[[CallContext, Params, Exception], Any]] = {
    "session/approve": _acknowledge_unknown_request,
}


# -- the dialect


class ZeroCodeDialect(Dialect):
    name = "zerocode"
    snake_case = True
    numbered = False  # ZeroClaw 0.8.4 numbers no update

    def __init__(self) -> None:
        self._adapted: dict[MethodSpec[Any], MethodSpec[Any]] = {}

    def adapt(self, spec: Any) -> Any:
        adapted = self._adapted.get(spec)
        if adapted is None:
            adapted = self._adapted[spec] = _adapt(spec)
        return adapted

    def events(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[dict[str, Any]]:
        # ZeroClaw 0.8.4 numbers nothing and knows no `approval_resolved` (R-MULTI-1: its shapes are kept).
        return [_event(event, sessions) for event in events if event["type"] != "approval_resolved"]

    def _chunk_prefix(self, session_id: str) -> bytes:
        return (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"type":"agent_message_chunk","session_id":'
            + orjson.dumps(session_id)
            + b',"text":'
        )

    def question(self, schema: Mapping[str, Any]) -> Question | None:
        """A one-of-options question as zerocode's choice form (zc:wire.rs:559-626); anything else it cannot show."""
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or len(properties) != 1:
            return None
        ((name, prop),) = properties.items()
        options = prop.get("enum") if isinstance(prop, Mapping) else None
        if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
            return None
        form = {
            "type": "object",
            "properties": {
                "choice": {
                    "type": "string",
                    "title": "Choice",
                    "oneOf": [{"const": f"choice-{i}", "title": option} for i, option in enumerate(options)],
                }
            },
            "required": ["choice"],
        }

        def decode(content: Mapping[str, Any]) -> dict[str, Any] | None:
            chosen = content.get("choice")
            if not isinstance(chosen, str) or not chosen.startswith("choice-") or not chosen[7:].isdigit():
                return None
            index = int(chosen[7:])
            return {name: options[index]} if index < len(options) else None

        return Question(form, decode)


def _adapt(spec: MethodSpec[Any]) -> MethodSpec[Any]:
    shape = RESULT_SHAPES.get(spec.name)
    model, adapt_params = PARAMS.get(spec.name, (None, None))
    on_error = ERRORS.get(spec.name)
    if shape is None and model is None and adapt_params is None and on_error is None:
        return spec
    handler = spec.handler

    def finish(ctx: CallContext, params: Params, result: Any) -> Any:
        if shape is None:
            return result
        if isinstance(result, AfterReply):
            return AfterReply(shape(ctx, params, result.result), result.then)
        return shape(ctx, params, result)

    async def finish_later(ctx: CallContext, params: Params, call: Awaitable[Any]) -> Any:
        try:
            result = await call
        except Exception as exc:
            if on_error is None:
                raise
            return on_error(ctx, params, exc)
        return finish(ctx, params, result)

    if spec.is_async:

        async def run_async(ctx: CallContext, params: Params) -> Any:
            if adapt_params is not None:
                params = adapt_params(params)
            return await finish_later(ctx, params, handler(ctx, params))

        run: Callable[[CallContext, Params], Any] = run_async
    else:

        def run_sync(ctx: CallContext, params: Params) -> Any:
            if adapt_params is not None:
                params = adapt_params(params)
            try:
                result = handler(ctx, params)
            except Exception as exc:
                if on_error is None:
                    raise
                return on_error(ctx, params, exc)
            if type(result) is CoroutineType:  # it has to wait this time (rpc.registry)
                return finish_later(ctx, params, result)
            return finish(ctx, params, result)

        run = run_sync
    assert inspect.iscoroutinefunction(run) == spec.is_async
    params_model = model or spec.params
    return MethodSpec(
        spec.name, run, params_model, spec.grant, spec.local_only, spec.requires_init, spec.barrier, spec.answered
    )


def _event(event: SessionEvent, sessions: SessionRegistry | None) -> dict[str, Any]:
    """One `session/update` as ZeroClaw 0.8.4 writes it (rt:types.rs:1315-1385, rt:approval_channel.rs:155-167)."""
    session_id = event["session_id"]
    if event["type"] == "approval_request":
        return {
            "type": "approval_request",
            "session_id": session_id,
            "request_id": event["request_id"],
            "tool_name": event["tool_name"],
            "arguments_summary": orjson.dumps(event["arguments"]).decode(),
            "timeout_secs": int(event["timeout_secs"]),  # `Duration::as_secs()`: whole seconds
        }
    if event["type"] == "turn_complete":
        outcome = _OUTCOMES.get(event["stop_reason"], "failed")
        return {
            "type": "turn_complete",
            "session_id": session_id,
            "outcome": outcome,
            "content": _attribution(outcome, session_id, event["content"], sessions),
        }
    if event["type"] == "history_trimmed":
        return {
            "type": "history_trimmed",
            "session_id": session_id,
            "dropped_messages": event["dropped_messages"],
            "kept_turns": event["kept_turns"],
            "reason": event["reason"],
        }
    return {"type": event["type"], **{k: v for k, v in event.items() if k != "type" and k != "seq"}}


def _attribution(outcome: str, session_id: str, content: str, sessions: SessionRegistry | None) -> str:
    """rt:dispatch.rs:1932-1997: a cancelled or failed turn ends with a sentence saying so, not its text again."""
    if outcome == "completed":
        return content
    if outcome == "failed":
        reason = content.strip()
        return f"turn failed: {reason}" if reason else "turn failed"
    live = sessions.live.get(session_id) if sessions is not None else None
    cause = live.cancel_cause if live is not None else None
    if cause is None:
        return f"turn cancelled (cause unattributed) in RPC_SESSION {session_id}"
    return f"turn cancelled via {cause} in RPC_SESSION {session_id}"


ZEROCODE = ZeroCodeDialect()
