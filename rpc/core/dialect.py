"""Wire dialects (R-ZC-1, R-EDIT-1, R-ARCH-4): how one connection's calls, results and notifications are shaped.

The handlers and the domain know nothing of dialects. A connection speaks the standard dialect (SPEC §3: camelCase)
unless its listener chose another (`Peer.dialect`) or its `initialize` asked for one (`claims`); the composition
root names the dialects it serves (`rpc.dialects.DIALECTS`). Its dialect then shapes, at the protocol boundary:

* `initialize`: the version it speaks, its own fields (`hello`), and its answer (`welcome`, which signs in);
* typed results (`CallContext.wire`): dataclass fields as camelCase keys, or as they are named (snake_case);
* `session/update` events (`rpc.core.session_bridge.ClientSink`);
* each method (`adapt`): what it runs differently (`adaptations`, one `rpc.core.registry.Adaptation` per method),
  and the methods only its wire has (`own_methods`);
* questions (`elicitation/create`) a client of the dialect can show.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from rpc.core.envelope import encode_notifications
from rpc.core.registry import Adaptation, MethodSpec
from rpc.core.wire import events_to_wire, to_wire

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry

__all__ = ["PROTOCOL_VERSION", "STANDARD", "Dialect", "Question", "SignedIn"]

PROTOCOL_VERSION = 1  # the standard dialect's (SPEC §7.1)

# A handler's `rpc.core.context.CallContext`: not named here, the context names this module.
Context = Any


@dataclass(frozen=True, slots=True)
class Question:
    """An `elicitation/create` form as a dialect's clients can show it, and how to read their answer back into the
    shape the question was asked in (None: the answer names nothing that was offered)."""

    schema: Mapping[str, Any]
    decode: Callable[[Mapping[str, Any]], dict[str, Any] | None]


class SignedIn(NamedTuple):
    """Who `initialize` authenticated, and what the caller sent: the standard params, and the dialect's own
    (`Dialect.hello`)."""

    credential: object
    principal: Principal
    params: Any  # `rpc.methods.lifecycle.InitializeParams`
    hello: Any


def _as_given(content: Mapping[str, Any]) -> dict[str, Any] | None:
    return dict(content)


class Dialect:
    """The standard dialect; others override what differs."""

    name = "standard"
    snake_case = False
    numbered = True  # `seq` on each `session/update` (R-MULTI-1)
    protocol_version: int | None = PROTOCOL_VERSION  # what `initialize` must ask for; None: any (answered with ours)
    adaptations: Mapping[str, Adaptation] = {}
    own_methods: Mapping[str, MethodSpec[Any]] = {}

    def __init__(self) -> None:
        self._adapted: dict[MethodSpec[Any], MethodSpec[Any]] = {}

    # -- initialize

    def claims(self, params: Mapping[str, Any]) -> bool:
        """An `initialize` with these params (as sent) asks for this dialect."""
        return False

    def hello(self, params: Mapping[str, Any]) -> Any:
        """This dialect's own `initialize` fields, validated (`rpc.core.errors.InvalidParams` names the first that
        fails); None when it has none."""
        return None

    def welcome(self, ctx: Context, signed: SignedIn) -> Any:
        """Sign the caller in (`ctx.sign_in`, in this dialect) and answer its `initialize`."""
        principal = signed.principal
        ctx.sign_in(signed.credential, principal, signed.params.client_capabilities or {}, dialect=self)
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "serverVersion": ctx.services.version,
            "serverPid": os.getpid(),
            "principal": {"id": principal.id, "admin": principal.admin},
            "methods": ctx.daemon_view.method_names(),
        }

    def error(self, exc: Exception) -> Exception:
        """An error as this dialect answers it."""
        return exc

    # -- results and updates

    def wire(self, value: Any) -> Any:
        return to_wire(value, snake=self.snake_case)

    def events(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[dict[str, Any]]:
        """`session/update` params (`sessions`: for what a dialect says about a turn beyond its events)."""
        return events_to_wire(events)

    def encode_updates(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[bytes]:
        """`session/update` notification frames for `events`. A batch of text chunks (what a turn streams) is
        written from a template, one `orjson.dumps` of the text each: no dict per chunk (benchmarks/run.py,
        streaming row)."""
        if events and all(event["type"] == "agent_message_chunk" for event in events):
            prefix = self._chunk_prefix(events[0]["session_id"])
            dumps = orjson.dumps
            try:
                if self.numbered and "seq" in events[0]:  # a batch is numbered whole (app.sessions.live.updates)
                    return [
                        b'%b%b,"seq":%d}}' % (prefix, dumps(event["text"]), event["seq"])  # type: ignore[typeddict-item]
                        for event in events
                    ]
                return [prefix + dumps(event["text"]) + b"}}" for event in events]  # type: ignore[typeddict-item]
            except orjson.JSONEncodeError:
                pass  # text orjson refuses (a lone surrogate): the general path knows what to do with it
        return encode_notifications("session/update", self.events(events, sessions))

    def _chunk_prefix(self, session_id: str) -> bytes:
        """What `events` makes of a text chunk, up to its text (kept equal by tests/unit/rpc/test_dialect.py)."""
        return (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
            + orjson.dumps(session_id)
            + b',"type":"agent_message_chunk","text":'
        )

    def question(self, schema: Mapping[str, Any]) -> Question | None:
        """The form to send for a question asked with `schema`; None when this dialect's clients cannot show it."""
        return Question(schema, _as_given)

    # -- methods

    def adapt(self, spec: MethodSpec[Any]) -> MethodSpec[Any]:
        """The registry entry this dialect runs for `spec` (the entry itself when nothing differs), made once."""
        adaptation = self.adaptations.get(spec.name)
        if adaptation is None:
            return spec
        adapted = self._adapted.get(spec)
        if adapted is None:
            adapted = self._adapted[spec] = spec.adapted(adaptation)
        return adapted

    def own_method(self, name: str) -> MethodSpec[Any] | None:
        """A method only this dialect's wire has, or None."""
        return self.own_methods.get(name)

    async def deliver(
        self,
        client: Any,
        authority: Any,
        updates: Sequence[SessionEvent],
        sessions: SessionRegistry,
    ) -> None:
        """Send `updates` to `client` (an `rpc.core.context.ClientChannel`, whose caller is `authority`); a dialect may
        turn some into requests to it."""
        await client.send_encoded(self.encode_updates(updates, sessions))


STANDARD = Dialect()
