"""What a session needs from a connection: a place to stream updates and a client to ask (R-STREAM, R-BIDI-5)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from app.agents.base import Elicitation
from app.sessions.errors import SessionError
from rpc.connection import Connection, PeerError, PendingLimitReached
from rpc.envelope import encode_notifications
from rpc.transports.base import ConnectionClosed

__all__ = ["ConnectionChannel", "ConnectionSink", "sink_for"]


class ConnectionSink:
    """`session/update` notifications to one connection, with its outbound backpressure.

    An `approval_request` is answered by `session/approve` from a client. Once this connection can answer
    nothing more (it ended its input, R-WIRE-9, or disconnected) the approval requests it was shown are rejected
    at once, and so is any shown to it later, unless another open client of the same principal watches the
    session and may still answer (the rule of the gateway's REST sink), instead of waiting
    `approval_timeout_secs` for an answer that cannot come.
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._asked: dict[str, str] = {}  # requestId → sessionId of the approval requests shown here
        connection.when_gone(self._gone)

    @property
    def answerable(self) -> bool:
        """The client can still send requests (`session/approve`)."""
        return not self._connection.closed and not self._connection.input_closed

    @property
    def principal_id(self) -> str | None:
        return self._connection.principal_id

    @property
    def closed(self) -> bool:
        return self._connection.closed

    async def send_updates(self, updates: Sequence[dict[str, Any]]) -> None:
        transport = self._connection.transport
        if transport.writing_paused:
            await transport.wait_writable()
        if self._connection.closed:
            raise ConnectionClosed
        transport.send_many(encode_notifications("session/update", updates))
        if len(updates) == 1 and updates[0].get("type") == "approval_request":  # emitted alone, never batched
            self._shown_approval(updates[0])

    def _shown_approval(self, update: dict[str, Any]) -> None:
        session_id, request_id = update.get("sessionId"), update.get("requestId")
        if not isinstance(session_id, str) or not isinstance(request_id, str):
            return
        if not self.answerable:
            self._reject_unless_watched(session_id, request_id)
            return
        sessions = self._connection.server.services.sessions
        for rid, sid in list(self._asked.items()):  # forget the settled ones
            live = sessions.live.get(sid)
            if live is None or rid not in live.approvals:
                del self._asked[rid]
        self._asked[request_id] = session_id

    def _gone(self) -> None:
        asked, self._asked = self._asked, {}
        for request_id, session_id in asked.items():
            self._reject_unless_watched(session_id, request_id)

    def _reject_unless_watched(self, session_id: str, request_id: str) -> None:
        connection = self._connection
        live = connection.server.services.sessions.live.get(session_id)
        if live is None or request_id not in live.approvals or connection.principal is None:
            return
        for watcher in live.watchers:
            # UpdateSink declares `principal_id` settable; this sink's is a read-only view of the connection's.
            if watcher is self or watcher.principal_id != connection.principal_id:
                continue
            if watcher.answerable if isinstance(watcher, ConnectionSink) else not watcher.closed:
                return  # another client of the same principal got the request too and may still answer it
        with suppress(SessionError):  # answered meanwhile, or the session went away: nothing left to settle
            connection.server.services.sessions.approve(connection.principal, session_id, request_id, "reject")


def sink_for(connection: Connection) -> ConnectionSink:
    """One sink per connection, so watching a session twice does not double its updates. It is kept on the
    connection: a table keyed by connections would keep each one alive through its sink."""
    sink = connection.session_sink
    if sink is None:
        sink = connection.session_sink = ConnectionSink(connection)
    return sink  # type: ignore[no-any-return]  # Connection cannot name this module's type (import cycle)


class ConnectionChannel:
    """`elicitation/create` to the prompting connection; every outcome is an answer, never an exception."""

    def __init__(self, connection: Connection, session_id: str) -> None:
        self._connection = connection
        self._session_id = session_id

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        connection = self._connection
        if connection.closed or "elicitation" not in connection.client_capabilities:
            return Elicitation("unavailable", reason="no interactive client is attached")
        params = {
            "sessionId": self._session_id,
            "mode": "form",
            "message": message,
            "requestedSchema": requested_schema,
        }
        try:
            answer = await connection.request("elicitation/create", params, timeout=timeout)
        except TimeoutError:
            return Elicitation("unanswered", reason=f"no answer within {timeout:g} s")
        except ConnectionClosed:
            if connection.input_closed and not connection.closed:  # R-WIRE-9: EOF, the answers still go out
                return Elicitation("failed", reason="the client ended its input and cannot answer")
            return Elicitation("failed", reason="the client disconnected")
        except PeerError:
            return Elicitation("failed", reason="the client answered with an error")
        except PendingLimitReached:
            return Elicitation("failed", reason="too many questions are already waiting (pending_client_requests)")
        return _parse(answer)


def _parse(answer: Any) -> Elicitation:
    if isinstance(answer, dict):
        action = answer.get("action")
        if action == "accept" and isinstance(answer.get("content"), dict):
            return Elicitation("accept", answer["content"])
        if action in ("decline", "cancel"):
            return Elicitation(action)
    return Elicitation("failed", reason="the client's answer was not a valid elicitation result")
