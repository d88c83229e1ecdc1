"""The session routes of the REST surface (R-GW-2), thin adapters over `app.sessions.registry.SessionRegistry`
like their RPC twins in `rpc/methods/session.py` (same params models, grants, result shapes and error kinds):

    GET  /api/sessions                 = session/list      (?includeKilled=true)
    GET  /api/sessions/{id}/messages   = session/messages  (?limit=&before=)
    POST /api/sessions/{id}/prompt     = session/prompt    ({"prompt"} → {sessionId, stopReason, content})

Also the pieces a turn started over HTTP needs, shared with `POST /webhook/{agent}` (gateway/webhook.py):

* `NoInteractiveClient`: an HTTP caller cannot answer `elicitation/create`, so `ask_user`/`poll` get
  "unavailable" at once (R-BIDI-5).
* `GatewaySink`: the turn's prompting receiver. It forwards nothing (the HTTP answer is the final result); it
  rejects an `approval_request` at once when no other client of the same principal is watching the session,
  instead of letting the tool wait `approval_timeout_secs` for an answer nobody can give (R-STREAM-3). When a
  watcher is attached (the panel, `zeroclaw chat`), the request stays open for it to answer as usual.
* `GatewayTurns`: one gateway call per session at a time, and the live-session table left as it was found (a
  session the call had to bring to life is released after its turn unless a client is watching it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from app.agents.base import Elicitation
from app.auth.policy import Principal
from app.sessions.errors import SessionBusy, SessionError
from app.sessions.turn import TurnOutcome
from gateway.auth import authorize
from gateway.errors import json_response
from gateway.rest import _json_object
from rpc.dispatcher import Params, Registry, validation_errors
from rpc.errors import InvalidParams
from rpc.methods.session import ListParams, MessagesParams, PromptParams, files_of, message_row
from rpc.server import RpcServer

if TYPE_CHECKING:
    from app.services import Services
    from app.sessions.live import LiveSession
    from app.sessions.registry import SessionRegistry

__all__ = [
    "GatewaySink",
    "GatewayTurns",
    "NoInteractiveClient",
    "SessionApi",
    "validate",
]

NO_CLIENT_REASON = "no interactive client is attached"
_SESSION_ID_KEYS = ("sessionId", "session_id")  # the path names the session; a body or query spelling cannot

P = TypeVar("P", bound=Params)


class NoInteractiveClient:
    """The `ClientChannel` of a REST or webhook turn: nobody can answer an elicitation."""

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        return Elicitation("unavailable", reason=NO_CLIENT_REASON)


class GatewaySink:
    """The `UpdateSink` of a REST or webhook turn (see the module docstring). Never raises."""

    def __init__(self, sessions: SessionRegistry, principal: Principal) -> None:
        self._sessions = sessions
        self._principal = principal
        self.principal_id: str | None = principal.id

    @property
    def closed(self) -> bool:
        return False

    async def send_updates(self, updates: Sequence[dict[str, Any]]) -> None:
        for params in updates:
            if params.get("type") == "approval_request":
                self._reject_unless_watched(params)

    def _reject_unless_watched(self, params: dict[str, Any]) -> None:
        session_id, request_id = params.get("sessionId"), params.get("requestId")
        if not isinstance(session_id, str) or not isinstance(request_id, str):
            return  # not a request anyone could answer (the turn always names both)
        live = self._sessions.live.get(session_id)
        if live is None or self._watched(live):
            return  # a watcher of the same principal got the request too and may still answer it
        with suppress(SessionError):  # already answered, or the session went away: nothing left to settle
            self._sessions.approve(self._principal, session_id, request_id, "reject")

    def _watched(self, live: LiveSession) -> bool:
        return any(w is not self and not w.closed and w.principal_id == self.principal_id for w in live.watchers)


class GatewayTurns:
    """Bookkeeping shared by the REST prompt and the webhook routes."""

    def __init__(self, sessions: SessionRegistry) -> None:
        self._sessions = sessions
        self._busy: set[str] = set()

    @asynccontextmanager
    async def hold(self, session_id: str, *, created: bool = False) -> AsyncIterator[None]:
        """Claim `session_id` for one gateway call; a second concurrent one is busy (`-32002` → 409). This also
        closes the window in which two calls could both bring the same stored session to life. On the way out the
        session is released if it was not live before the call (`created`: the caller has just created it)."""
        if session_id in self._busy:
            raise SessionBusy
        self._busy.add(session_id)
        was_live = not created and session_id in self._sessions.live
        try:
            yield
        finally:
            self._busy.discard(session_id)
            if not was_live:
                self._release_when_idle(session_id)

    def _release_when_idle(self, session_id: str) -> None:
        live = self._sessions.live.get(session_id)
        turn = live.turn if live is not None else None
        if turn is not None and not turn.done():  # `live.busy`, spelled so the type checker sees the turn
            # The call ended before a turn did (the request was cancelled; the turn is shielded and goes on):
            # release once it is over, unless a gateway call holds the session again by then.
            turn.add_done_callback(lambda _: session_id in self._busy or self._sessions.release(session_id))
        else:
            self._sessions.release(session_id)

    async def prompt(self, principal: Principal, session_id: str, text: str) -> TurnOutcome:
        outcome: TurnOutcome = await self._sessions.prompt(
            principal,
            session_id,
            text,
            sink=GatewaySink(self._sessions, principal),
            client=NoInteractiveClient(),
        )
        return outcome


def validate(model: type[P], data: Mapping[str, Any]) -> P:
    """`data` through an RPC params model: a failure is 400 `invalid_params` naming the fields (never values)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidParams(errors=validation_errors(exc)) from None


class SessionApi:
    def __init__(self, services: Services, rpc_server: RpcServer, registry: Registry, turns: GatewayTurns) -> None:
        self.services = services
        self.rpc_server = rpc_server
        self.registry = registry
        self.turns = turns

    async def list_sessions(self, request: Request) -> Response:
        """`GET /api/sessions[?includeKilled=true]` → `{sessions: [...]}` (the caller's own; admin sees all)."""
        caller = await authorize(request, self.services, self.registry, "session/list")
        params = validate(ListParams, request.query_params)
        sessions = await self.services.sessions.list_sessions(caller.principal, include_killed=params.include_killed)
        return json_response({"sessions": sessions})

    async def messages(self, request: Request) -> Response:
        """`GET /api/sessions/{id}/messages[?limit=&before=]` → `{sessionId, messages, total}`."""
        caller = await authorize(request, self.services, self.registry, "session/messages")
        params = validate(MessagesParams, _with_session_id(request.query_params, request))
        rows, total = await self.services.sessions.messages(
            caller.principal, params.session_id, limit=params.limit, before=params.before
        )
        return json_response(
            {"sessionId": params.session_id, "messages": [message_row(r) for r in rows], "total": total}
        )

    async def prompt(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/prompt` with `{"prompt", "attachments"?}` → `{sessionId, stopReason, content}`
        when the turn ends. The session must exist: live (either mode) or a durable ACP one (rehydrated)."""
        caller = await authorize(request, self.services, self.registry, "session/prompt")
        body = await _json_object(request)
        params = validate(PromptParams, _with_session_id(body, request))
        principal = caller.principal
        self.services.sessions.check_prompt(params.prompt)
        async with self.turns.hold(params.session_id):
            text = params.prompt
            if params.attachments:
                text = await files_of(self.services).prompt_with_attachments(
                    principal, params.session_id, text, params.attachments
                )
            outcome = await self.turns.prompt(principal, params.session_id, text)
        return json_response(
            {"sessionId": params.session_id, "stopReason": outcome.stop_reason, "content": outcome.content}
        )


def _with_session_id(data: Mapping[str, Any], request: Request) -> dict[str, Any]:
    return {**{k: v for k, v in data.items() if k not in _SESSION_ID_KEYS}, "sessionId": request.path_params["id"]}
