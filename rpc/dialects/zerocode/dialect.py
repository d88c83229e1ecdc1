"""The zerocode dialect (SPEC §17, R-ZC-1..6): the wire of ZeroClaw 0.8.4, which its terminal client reads strictly.

A connection whose `initialize` has zerocode's own shape speaks it (`speaks_zerocode`), and so does every peer of the
`[wss]` listener (`Peer.dialect`). Nothing here runs a method: the standard handlers do, and the dialect shapes what
goes in and out, the way ZeroClaw 0.8.4's daemon does (crates/zeroclaw-runtime/src/rpc/{types,dispatch}.rs at tag
v0.8.4; the table is in docs/zerocode.md):

* `initialize` takes the terminal's `env` and `tui_id` (R-ZC-6) and answers in ZeroClaw's fields;
* results and `session/update` events use snake_case keys and ZeroClaw's fields (`RESULT_SHAPES`, `events`);
* `session/new` makes a chat session unless `chat_mode` says `acp`; `session/list` lists chat sessions and
  `session/list-acp` ACP ones; `session/prompt` answers `{}` (its text travels in `turn_complete`);
* `session/approve` also takes `reject_once` and `reject_with_edit` (with `replacement`), and acknowledges a request
  id it does not know, as ZeroClaw does (the methods: rpc/dialects/zerocode/methods.py);
* a question is a choice form (`oneOf` of `{const: "choice-<i>", title}`); a free-form one fails at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import orjson

from rpc.core.context import Terminal
from rpc.core.dialect import Dialect, Question, SignedIn
from rpc.core.registry import Params, validate, whole
from rpc.dialects.zerocode.methods import ADAPTATIONS, PROTOCOL_VERSION

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry
    from rpc.core.context import CallContext

__all__ = ["ZEROCODE", "ZeroCodeDialect", "ZeroCodeHello", "new_tui_id", "speaks_zerocode"]

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


TerminalId = Annotated[str, whole(r"[A-Za-z0-9_-]{1,64}")]


# Events ZeroClaw 0.8.4 does not have.
_NOT_SENT = frozenset({"approval_resolved", "config_changed", "usage", "tool_progress", "rolled_back", "user_message"})


class ZeroCodeHello(Params, frozen=True):
    """zerocode's own `initialize` fields (R-ZC-1, R-ZC-6): its environment, and the identity it had before a
    reconnect."""

    env: dict[str, str] | None = None
    tui_id: TerminalId | None = None
    tui_sig: Annotated[str, msgspec.Meta(max_length=256)] | None = None

    def __repr__(self) -> str:
        return f"ZeroCodeHello(tui_id={self.tui_id!r}, ...)"  # the environment stays out of logs and tracebacks


class ZeroCodeDialect(Dialect):
    name = "zerocode"
    snake_case = True
    numbered = False  # ZeroClaw 0.8.4 numbers no update
    protocol_version = PROTOCOL_VERSION
    adaptations = ADAPTATIONS

    def claims(self, params: Mapping[str, Any]) -> bool:
        return speaks_zerocode(params)

    def hello(self, params: Mapping[str, Any]) -> ZeroCodeHello:
        return validate(ZeroCodeHello, dict(params))

    def welcome(self, ctx: CallContext, signed: SignedIn) -> dict[str, Any]:
        """R-ZC-1, R-ZC-3, R-SVC-4: as ZeroClaw 0.8.4 (rt:dispatch.rs:909-920)."""
        hello: ZeroCodeHello = signed.hello
        terminal = Terminal(hello.tui_id or new_tui_id(), hello.env or {})
        capabilities = signed.params.client_capabilities or {}
        ctx.sign_in(signed.credential, signed.principal, capabilities, dialect=self, terminal=terminal)
        return {
            "protocol_version": PROTOCOL_VERSION,
            "server_version": ctx.services.config.compat.zerocode_version,
            "tui_id": terminal.tui_id,
            "capabilities": ctx.daemon_view.method_names(),
        }

    def events(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[dict[str, Any]]:
        # ZeroClaw 0.8.4 numbers nothing and knows no `approval_resolved`, `config_changed` (R-MULTI-1) nor `usage`
        # (R-MODEL-5): its shapes are kept.
        return [_event(event, sessions) for event in events if event["type"] not in _NOT_SENT]

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
