"""What a session needs from a connection: a place to stream updates and a client to ask (R-STREAM, R-BIDI-5)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from app.agents.base import Elicitation
from rpc.connection import Connection, PeerError, PendingLimitReached
from rpc.envelope import encode_notifications
from rpc.transports.base import ConnectionClosed

__all__ = ["ConnectionChannel", "ConnectionSink", "sink_for"]

_sinks: weakref.WeakKeyDictionary[Connection, ConnectionSink] = weakref.WeakKeyDictionary()


class ConnectionSink:
    """`session/update` notifications to one connection, with its outbound backpressure."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

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


def sink_for(connection: Connection) -> ConnectionSink:
    """One sink per connection, so watching a session twice does not double its updates."""
    sink = _sinks.get(connection)
    if sink is None:
        sink = _sinks[connection] = ConnectionSink(connection)
    return sink


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
