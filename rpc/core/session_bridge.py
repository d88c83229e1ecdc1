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
from rpc.core.client_requests import PeerError, PendingLimitReached
from rpc.core.context import Authority, CallContext, ClientChannel
from rpc.core.dialect import STANDARD, Question
from rpc.transports.base import ConnectionClosed

if TYPE_CHECKING:
    from app.sessions.events import ApprovalRequest, SessionEvent
    from app.sessions.registry import SessionRegistry

__all__ = ["ClientSink", "Elicitor", "sink_for"]


class ClientSink:
    """`session/update` notifications to one client, with its outbound backpressure.

    An `approval_request` is answered by `session/approve` from any attached client of the session's owner or an
    admin (R-MULTI-3): it stays pending until an answer or its timeout, also once the client that prompted has gone,
    since another may attach and answer it. Only a one-shot caller (an HTTP prompt, which can never answer) has the
    requests it is shown rejected at once, unless an attached client that may still answer got them too, instead of
    waiting `approval_timeout_secs` for an answer nobody can give.
    """

    def __init__(self, client: ClientChannel, sessions: SessionRegistry, authority: Authority) -> None:
        self.client = client
        self._sessions = sessions
        self._authority = authority

    @property
    def answerable(self) -> bool:
        """The client can still send requests (`session/approve`)."""
        return self.client.answerable

    @property
    def principal_id(self) -> str | None:
        return self.client.principal_id

    @property
    def closed(self) -> bool:
        return self.client.closed

    async def send_updates(self, updates: Sequence[SessionEvent], frames: list[bytes] | None = None) -> None:
        """Domain events (`app.sessions.events`) out as `session/update` notifications, in their wire shape
        (`frames`: already encoded in the standard dialect)."""
        client = self.client
        if frames is not None and client.dialect is STANDARD:
            await client.send_encoded(frames)
        else:
            await client.dialect.deliver(client, self._authority, updates, self._sessions)
        if client.one_shot and len(updates) == 1 and updates[0]["type"] == "approval_request":  # emitted alone
            self._reject_unless_watched(updates[0])

    def drop(self) -> None:
        self.client.drop()

    def _reject_unless_watched(self, update: ApprovalRequest) -> None:
        session_id, request_id = update["session_id"], update["request_id"]
        principal = self._authority.principal
        live = self._sessions.live.get(session_id)
        if live is None or request_id not in live.approvals or principal is None:
            return
        for watcher in live.watchers:
            if watcher is not self and (watcher.answerable if isinstance(watcher, ClientSink) else not watcher.closed):
                return  # an attached client got the request too and may still answer it
        with suppress(SessionError):  # answered meanwhile, or the session went away: nothing left to settle
            self._sessions.turns.approve(principal, session_id, request_id, "reject")


def sink_for(ctx: CallContext) -> ClientSink:
    """One sink per client, so watching a session twice does not double its updates. It is kept on the client's
    channel: a table keyed by connections would keep each one alive through its sink."""
    sink = ctx.client.sink
    if not isinstance(sink, ClientSink):
        sink = ctx.client.sink = ClientSink(ctx.client, ctx.services.sessions, ctx.authority)
    return sink


class Elicitor:
    """`elicitation/create` to the prompting client; every outcome is an answer, never an exception.

    When that client cannot be asked (gone, or it announced no elicitation), the question goes to another attached
    client of the session's owner that announced it, and to the next when that one goes too (R-MULTI-3).
    """

    def __init__(self, client: ClientChannel, session_id: str, sessions: SessionRegistry | None = None) -> None:
        self._client = client
        self._session_id = session_id
        self._sessions = sessions

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        client, asked = self._client, [self._client]
        if not _can_ask(client):
            client = self._another(asked) or client
        while True:
            answer = await self._ask(client, message, requested_schema, timeout)
            if answer.action != "failed" or (not client.closed and client.answerable):
                return answer  # answered, or failed for a reason asking someone else would not change
            other = self._another(asked)
            if other is None:
                return answer
            asked.append(client := other)

    def _another(self, asked: list[ClientChannel]) -> ClientChannel | None:
        """An attached client of the owner, not asked yet, that can show a question now."""
        live = self._sessions.live.get(self._session_id) if self._sessions is not None else None
        if live is None:
            return None
        for watcher in live.watchers:
            if isinstance(watcher, ClientSink) and watcher.principal_id == live.owner:
                client = watcher.client
                if _can_ask(client) and all(client is not other for other in asked):
                    return client
        return None

    async def _ask(
        self, client: ClientChannel, message: str, requested_schema: dict[str, Any], timeout: float
    ) -> Elicitation:
        if client.closed or "elicitation" not in client.capabilities:
            return Elicitation("unavailable", reason=_why_not(client))
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


NO_CLIENT = "no interactive client is attached to this session"
CANNOT_ASK = "the attached client cannot answer questions (it did not announce the elicitation capability)"


def _why_not(client: ClientChannel) -> str:
    """Why `client` is not asked: there is no one (an HTTP call, a connection gone), or there is one that cannot
    show a question (an editor without elicitation): the user is told which."""
    return NO_CLIENT if client.closed or client.one_shot else CANNOT_ASK


def _can_ask(client: ClientChannel) -> bool:
    return not client.closed and client.answerable and "elicitation" in client.capabilities


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
