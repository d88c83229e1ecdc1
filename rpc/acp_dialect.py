"""The ACP dialect (R-EDIT-1..6): the Agent Client Protocol v1 as one connection's wire.

A connection speaks it when `initialize` says so: the `zeroclaw acp` bridge marks the editor's `initialize` with
`_meta["zeroclaw.acp"]` (`rpc.acp.speaks_acp`), and the gateway's `/acp` route marks its peers (`Peer.acp`). Then:

* `session/update` events go out as ACP updates (`rpc.acp.acp_update`); a batch of text chunks from a template;
* an `approval_request` becomes the daemon→client request `session/request_permission` (`rpc.acp_peer`);
* the methods are `rpc.acp_methods`' (`adapt` for those the native registry has, `own_method` for ACP's own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from rpc.acp import acp_update, encode
from rpc.acp_methods import adapt, own_method
from rpc.acp_peer import peer_of
from rpc.dialect import Dialect, Question

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry

__all__ = ["ACP", "AcpDialect"]


class AcpDialect(Dialect):
    name = "acp"
    snake_case = False

    def __init__(self) -> None:
        self._adapted: dict[Any, Any] = {}

    def encode_updates(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[bytes]:
        """A batch of text chunks from a template, one `orjson.dumps` of each text (as the standard dialect)."""
        if events and all(event["type"] == "agent_message_chunk" for event in events):
            prefix = (
                b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
                + orjson.dumps(events[0]["session_id"])
                + b',"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":'
            )
            dumps = orjson.dumps
            try:
                return [prefix + dumps(event["text"]) + b"}}}}" for event in events]  # type: ignore[typeddict-item]
            except orjson.JSONEncodeError:
                pass  # a lone surrogate: the general path knows what to do with it
        return encode(events)

    def events(self, events: Sequence[SessionEvent], sessions: SessionRegistry | None = None) -> list[dict[str, Any]]:
        return [update[1] for event in events if (update := acp_update(event)) is not None]

    async def deliver(
        self,
        client: Any,
        authority: Any,
        updates: Sequence[SessionEvent],
        sessions: SessionRegistry,
    ) -> None:
        first = updates[0]
        if first["type"] == "approval_request":  # emitted alone, never batched
            peer_of(client).ask_permission(client, authority, sessions, first)
            return
        if first["type"] == "tool_call":
            peer_of(client).tool_called(first["session_id"], first["tool_call_id"])
        frames = self.encode_updates(updates, sessions)
        if frames:
            await client.send_encoded(frames)

    def question(self, schema: Mapping[str, Any]) -> Question | None:
        # Asked only of clients that advertised `elicitation.form` (`rpc.acp_methods.initialize`).
        return Question(schema, dict)

    def adapt(self, spec: Any) -> Any:
        adapted = self._adapted.get(spec)
        if adapted is None:
            adapted = self._adapted[spec] = adapt(spec)
        return adapted

    def own_method(self, name: str) -> Any:
        return own_method(name)


ACP = AcpDialect()
