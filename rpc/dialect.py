"""Wire dialects (R-ZC-1, R-ARCH-4): how one connection's results and notifications are shaped.

The handlers and the domain know nothing of dialects. A connection speaks the standard dialect (SPEC §3: camelCase)
unless `initialize` chose another; its dialect then shapes, at the protocol boundary:

* typed results (`CallContext.wire`): dataclass fields as camelCase keys, or as they are named (snake_case);
* `session/update` events (`rpc.session_bridge.ClientSink`);
* each method (`adapt`): a dialect may wrap a method's registry entry once (its params, its result, the errors it
  answers differently), and the dispatcher runs the wrapped entry for that connection;
* questions (`elicitation/create`) a client of the dialect can show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from rpc.envelope import encode_notifications
from rpc.wire import events_to_wire, to_wire

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry

Spec = TypeVar("Spec")  # an `rpc.registry.MethodSpec` (not imported: the registry names this module's users)

__all__ = ["STANDARD", "Dialect", "Question"]


@dataclass(frozen=True, slots=True)
class Question:
    """An `elicitation/create` form as a dialect's clients can show it, and how to read their answer back into the
    shape the question was asked in (None: the answer names nothing that was offered)."""

    schema: Mapping[str, Any]
    decode: Callable[[Mapping[str, Any]], dict[str, Any] | None]


def _as_given(content: Mapping[str, Any]) -> dict[str, Any] | None:
    return dict(content)


class Dialect:
    """The standard dialect; others override what differs."""

    name = "standard"
    snake_case = False
    numbered = True  # `seq` on each `session/update` (R-MULTI-1)

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

    def adapt(self, spec: Spec) -> Spec:
        """The registry entry this dialect runs for `spec` (the entry itself when nothing differs)."""
        return spec

    def own_method(self, name: str) -> Any:
        """A method only this dialect's wire has (an `rpc.registry.MethodSpec`), or None (rpc/acp_dialect.py)."""
        return None

    async def deliver(
        self,
        client: Any,
        authority: Any,
        updates: Sequence[SessionEvent],
        sessions: SessionRegistry,
    ) -> None:
        """Send `updates` to `client` (an `rpc.context.ClientChannel`, whose caller is `authority`); a dialect may
        turn some into requests to it (rpc/acp_dialect.py)."""
        await client.send_encoded(self.encode_updates(updates, sessions))


STANDARD = Dialect()
