"""What a session needs from its caller: a place to stream updates and a client to ask (R-STREAM, R-BIDI-5).

Both work on the caller's `ClientChannel`, so a turn started over HTTP (whose channel can answer nothing) follows
the same rules as one started on a socket whose client has gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from app.agents.base import Elicitation
from app.sessions.errors import SessionError
from rpc.client_requests import PeerError, PendingLimitReached
from rpc.context import Authority, CallContext, ClientChannel
from rpc.dialect import Question
from rpc.transports.base import ConnectionClosed

if TYPE_CHECKING:
    from app.sessions.events import ApprovalRequest, SessionEvent
    from app.sessions.registry import SessionRegistry

__all__ = ["ClientSink", "Elicitor", "sink_for"]


class ClientSink:
    """`session/update` notifications to one client, with its outbound backpressure.

    An `approval_request` is answered by `session/approve` from a client. Once this client can answer nothing
    more (it ended its input, R-WIRE-9, disconnected, or is an HTTP caller) the approval requests it was shown are
    rejected at once, and so is any shown to it later, unless another open client of the same principal watches the
    session and may still answer, instead of waiting `approval_timeout_secs` for an answer that cannot come.
    """

    def __init__(self, client: ClientChannel, sessions: SessionRegistry, authority: Authority) -> None:
        self._client = client
        self._sessions = sessions
        self._authority = authority
        self._asked: dict[str, str] = {}  # requestId → sessionId of the approval requests shown here
        client.when_gone(self._gone)

    @property
    def answerable(self) -> bool:
        """The client can still send requests (`session/approve`)."""
        return self._client.answerable

    @property
    def principal_id(self) -> str | None:
        return self._client.principal_id

    @property
    def closed(self) -> bool:
        return self._client.closed

    async def send_updates(self, updates: Sequence[SessionEvent]) -> None:
        """Domain events (`app.sessions.events`) out as `session/update` notifications, in their wire shape."""
        client = self._client
        await client.dialect.deliver(client, self._authority, updates, self._sessions)
        if len(updates) == 1 and updates[0]["type"] == "approval_request":  # emitted alone, never batched
            self._shown_approval(updates[0])

    def _shown_approval(self, update: ApprovalRequest) -> None:
        session_id, request_id = update["session_id"], update["request_id"]
        if not self.answerable:
            self._reject_unless_watched(session_id, request_id)
            return
        sessions = self._sessions
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
        principal = self._authority.principal
        live = self._sessions.live.get(session_id)
        if live is None or request_id not in live.approvals or principal is None:
            return
        for watcher in live.watchers:
            if watcher is self or watcher.principal_id != principal.id:
                continue
            if watcher.answerable if isinstance(watcher, ClientSink) else not watcher.closed:
                return  # another client of the same principal got the request too and may still answer it
        with suppress(SessionError):  # answered meanwhile, or the session went away: nothing left to settle
            self._sessions.approve(principal, session_id, request_id, "reject")


def sink_for(ctx: CallContext) -> ClientSink:
    """One sink per client, so watching a session twice does not double its updates. It is kept on the client's
    channel: a table keyed by connections would keep each one alive through its sink."""
    sink = ctx.client.sink
    if not isinstance(sink, ClientSink):
        sink = ctx.client.sink = ClientSink(ctx.client, ctx.services.sessions, ctx.authority)
    return sink


class Elicitor:
    """`elicitation/create` to the prompting client; every outcome is an answer, never an exception."""

    def __init__(self, client: ClientChannel, session_id: str) -> None:
        self._client = client
        self._session_id = session_id

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        client = self._client
        if client.closed or "elicitation" not in client.capabilities:
            return Elicitation("unavailable", reason="no interactive client is attached")
        question = client.dialect.question(requested_schema)
        if question is None:  # R-ZC-5: a form this client cannot show fails at once, as ZeroClaw's do
            return Elicitation("failed", reason=FREE_FORM_REFUSED)
        params = {
            "sessionId": self._session_id,
            "mode": "form",
            "message": message,
            "requestedSchema": question.schema,
        }
        try:
            answer = await client.request("elicitation/create", params, timeout=timeout)
        except TimeoutError:
            return Elicitation("unanswered", reason=f"no answer within {timeout:g} s")
        except ConnectionClosed:
            if not client.closed:  # R-WIRE-9: EOF, the answers still go out
                return Elicitation("failed", reason="the client ended its input and cannot answer")
            return Elicitation("failed", reason="the client disconnected")
        except PeerError:
            return Elicitation("failed", reason="the client answered with an error")
        except PendingLimitReached:
            return Elicitation("failed", reason="too many questions are already waiting (pending_client_requests)")
        return _parse(answer, question)


FREE_FORM_REFUSED = "this client can answer only choice questions (ask with options, as the poll tool does)"


def _parse(answer: Any, question: Question) -> Elicitation:
    if isinstance(answer, dict):
        action = answer.get("action")
        if action == "accept" and isinstance(answer.get("content"), dict):
            content = question.decode(answer["content"])
            if content is None:
                return Elicitation("failed", reason="the client chose something that was not offered")
            return Elicitation("accept", content)
        if action in ("decline", "cancel"):
            return Elicitation(action)
    return Elicitation("failed", reason="the client's answer was not a valid elicitation result")
