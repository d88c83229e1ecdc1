"""What the zerocode dialect runs differently (R-ZC-4, R-ZC-5): its params, results and errors around the standard
handlers, as ZeroClaw 0.8.4's daemon answers them (crates/zeroclaw-runtime/src/rpc/{types,dispatch}.rs at tag v0.8.4;
the table is in docs/zerocode.md). Each method's differences are one `Adaptation` (`ADAPTATIONS`), made from the
tables below: results (`RESULT_SHAPES`), params (`PARAMS`), errors (`ERRORS`) and own handlers (`HANDLERS`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from msgspec import Meta
from msgspec.structs import replace

from app.sessions.errors import ApprovalNotFound
from rpc.core.registry import Adaptation, Handler, Params, SessionId
from rpc.methods.session import Mode, NewParams

if TYPE_CHECKING:
    from rpc.core.context import CallContext

__all__ = ["ADAPTATIONS", "ERRORS", "HANDLERS", "PARAMS", "PROTOCOL_VERSION", "RESULT_SHAPES", "ZeroCodeApproveParams"]

PROTOCOL_VERSION = 1  # ZeroClaw's own protocol number, the one zerocode sends


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


def _approve(ctx: CallContext, params: ZeroCodeApproveParams) -> dict[str, Any]:
    """`session/approve` with what `reject_with_edit` wants instead (`replacement`), which the standard params
    do not carry."""
    acknowledged = ctx.services.sessions.turns.approve(
        ctx.principal, params.session_id, params.request_id, params.decision, params.replacement
    )
    return {"sessionId": params.session_id, "requestId": params.request_id, "acknowledged": acknowledged}


# Handlers of its own, in place of the standard ones.
HANDLERS: dict[str, Handler[Any]] = {"session/approve": _approve}


def _adaptation(name: str) -> Adaptation:
    model, prepare = PARAMS.get(name, (None, None))
    return Adaptation(model, HANDLERS.get(name), prepare, RESULT_SHAPES.get(name), ERRORS.get(name))


ADAPTATIONS: dict[str, Adaptation] = {name: _adaptation(name) for name in (*RESULT_SHAPES, *PARAMS, *ERRORS)}
