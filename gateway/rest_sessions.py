"""The session routes of the REST surface (R-GW-2): each is its JSON-RPC twin in `rpc/methods/session.py`, run
through the dispatcher (same admission, params model, handler, result shape and errors, R-ARCH-3):

    GET  /api/sessions                 = session/list      (?includeKilled=true)
    GET  /api/sessions/{id}/messages   = session/messages  (?limit=&before=)
    POST /api/sessions/{id}/prompt     = session/prompt    ({"prompt"} → {sessionId, stopReason, content})

A turn started over HTTP runs with a channel that can answer nothing (`rpc.context.NoClient`): `ask_user`/`poll`
get "unavailable" at once (R-BIDI-5), and an `approval_request` is rejected at once unless another client of the
same principal watches the session and may answer it (R-STREAM-3, `rpc.session_bridge.ClientSink`).

`GatewayTurns`, shared with `POST /webhook/{agent}`: one gateway call per session at a time, and the live-session
table left as it was found (a session the call had to bring to life is released after its turn unless a client is
watching it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from app.sessions.errors import SessionBusy
from gateway.auth import caller_context
from gateway.errors import json_response
from gateway.rest import json_object
from rpc.dispatcher import Dispatcher

if TYPE_CHECKING:
    from app.sessions.registry import SessionRegistry

__all__ = ["GatewayTurns", "SessionApi"]

_SESSION_ID_KEYS = ("sessionId", "session_id")  # the path names the session; a body or query spelling cannot


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


class SessionApi:
    def __init__(self, dispatcher: Dispatcher, turns: GatewayTurns) -> None:
        self.dispatcher = dispatcher
        self.turns = turns

    async def list_sessions(self, request: Request) -> Response:
        """`GET /api/sessions[?includeKilled=true]` → `{sessions: [...]}` (the caller's own; admin sees all)."""
        context = await caller_context(request, self.dispatcher)
        return json_response(await self.dispatcher.call("session/list", dict(request.query_params), context))

    async def messages(self, request: Request) -> Response:
        """`GET /api/sessions/{id}/messages[?limit=&before=]` → `{sessionId, messages, total}`."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(request.query_params, request)
        return json_response(await self.dispatcher.call("session/messages", params, context))

    async def prompt(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/prompt` with `{"prompt", "attachments"?}` → `{sessionId, stopReason, content}`
        when the turn ends. The session must exist: live (either mode) or a durable ACP one (rehydrated)."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(await json_object(request), request)
        self.dispatcher.admit("session/prompt", context)  # refused before the session is held
        async with self.turns.hold(params["sessionId"]):
            return json_response(await self.dispatcher.call("session/prompt", params, context))


def _with_session_id(data: Mapping[str, Any], request: Request) -> dict[str, Any]:
    return {**{k: v for k, v in data.items() if k not in _SESSION_ID_KEYS}, "sessionId": request.path_params["id"]}
