"""The ACP dialect (R-EDIT-1..6): the Agent Client Protocol v1 as one connection's wire.

A connection speaks it when `initialize` says so: the `zeroclaw acp` bridge marks the editor's `initialize` with
`_meta["zeroclaw.acp"]` (`updates.speaks_acp`), and the gateway's `/acp` route gives its peers this dialect
(`Peer.dialect`). Then:

* `initialize` answers version 1 whatever was asked, and only the capabilities that work (R-EDIT-2);
* `session/update` events go out as ACP updates (`updates.acp_update`); a batch of text chunks from a template;
* an `approval_request` becomes the daemon→client request `session/request_permission` (`peer`);
* the methods are `methods`' (ACP's way of the standard ones, and ACP's own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from rpc.core.dialect import Dialect, Question, SignedIn
from rpc.dialects.acp.peer import peer_of
from rpc.dialects.acp.updates import acp_update, encode, speaks_acp

if TYPE_CHECKING:
    from app.sessions.events import SessionEvent
    from app.sessions.registry import SessionRegistry
    from rpc.core.context import CallContext
    from rpc.core.registry import MethodSpec

PROTOCOL_VERSION = 1  # ACP's; any other version asked for is answered with this one

__all__ = ["ACP", "AcpDialect"]


class AcpDialect(Dialect):
    name = "acp"
    snake_case = False
    protocol_version = None  # ACP negotiates: whatever was asked, it is answered with version 1 (R-EDIT-2)

    def claims(self, params: Mapping[str, Any]) -> bool:
        return speaks_acp(params) is not None

    def hello(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The bridge's marker (`{"agent": ALIAS}`), `{}` on `/acp`."""
        return speaks_acp(params) or {}

    def welcome(self, ctx: CallContext, signed: SignedIn) -> dict[str, Any]:
        capabilities = dict(signed.params.client_capabilities or {})
        elicitation = capabilities.pop("elicitation", None)
        if isinstance(elicitation, Mapping) and isinstance(elicitation.get("form"), Mapping):
            capabilities["elicitation"] = elicitation  # questions only for clients showing forms
        ctx.sign_in(signed.credential, signed.principal, capabilities, dialect=self)
        agent = signed.hello.get("agent") or ctx.peer.agent
        peer_of(ctx.client).agent = agent if isinstance(agent, str) and agent else "default"
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},  # R-MCP-2: stdio (local peers) and http
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "zeroclaw", "title": "ZeroClaw", "version": ctx.services.version},
        }

    def error(self, exc: Exception) -> Exception:
        from rpc.dialects.acp.methods import acp_error  # see `_methods`

        return acp_error(exc)

    def adapt(self, spec: MethodSpec[Any]) -> MethodSpec[Any]:
        self._methods()
        return super().adapt(spec)

    def own_method(self, name: str) -> MethodSpec[Any] | None:
        self._methods()
        return super().own_method(name)

    def _methods(self) -> None:
        """ACP's methods (`methods.ADAPTATIONS`, `OWN_METHODS`), loaded by the first call of an ACP connection: a
        daemon no editor talks to never loads them (start-up and idle memory, benchmarks/README.md)."""
        if not self.adaptations:
            from rpc.dialects.acp.methods import ADAPTATIONS, OWN_METHODS

            self.adaptations, self.own_methods = ADAPTATIONS, OWN_METHODS

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
        # Asked only of clients that advertised `elicitation.form` (`welcome`).
        return Question(schema, dict)


ACP = AcpDialect()
