"""The session routes of the REST surface (R-GW-2): each is its JSON-RPC twin in `rpc/methods/session.py`, run
through the dispatcher (same admission, params model, handler, result shape and errors, R-ARCH-3):

    GET  /api/sessions                 = session/list      (?includeKilled=&mode=&query=&limit=&cursor=)
    GET  /api/sessions/{id}/messages   = session/messages  (?limit=&before=)
    GET  /api/sessions/{id}/usage      = session/usage     (→ {sessionId, total, turns}, R-MODEL-5)
    POST /api/sessions/{id}/prompt     = session/prompt    ({"prompt"} → {sessionId, stopReason, content})
    PATCH /api/sessions/{id}           = session/configure ({agentAlias?, model?, temperature?} → the settings)
    POST /api/sessions/{id}/fork       = session/fork      ({atIndex?} → {sessionId, parentId, forkedAt, ...})
    POST /api/sessions/{id}/rollback   = session/rollback  ({turns} → {sessionId, turns, fromIndex, markerIndex})
    POST /api/sessions/{id}/steer      = session/steer     ({prompt} → {accepted, index?})
    GET  /api/models                   = models/list       (?agentAlias=)

A turn started over HTTP runs with a channel that can answer nothing (`rpc.core.context.NoClient`): `ask_user`/`poll`
get "unavailable" at once (R-BIDI-5), and an `approval_request` is rejected at once unless another client of the
same principal watches the session and may answer it (R-STREAM-3, `rpc.core.session_bridge.ClientSink`).

Like `POST /webhook/{agent}`, the prompt route holds its session for the call
(`app.sessions.lifecycle.http_turns.HttpTurns`): one HTTP call per session at a time, and the live-session table left as
it was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from app.sessions.lifecycle.http_turns import HttpTurns
from gateway.auth import caller_context
from gateway.errors import json_response
from gateway.rest.body import json_object
from rpc.core.dispatcher import Dispatcher

__all__ = ["SessionApi"]

_SESSION_ID_KEYS = ("sessionId", "session_id")  # the path names the session; a body or query spelling cannot


class SessionApi:
    def __init__(self, dispatcher: Dispatcher, turns: HttpTurns) -> None:
        self.dispatcher = dispatcher
        self.turns = turns

    async def list_sessions(self, request: Request) -> Response:
        """`GET /api/sessions[?includeKilled=&mode=&query=&limit=&cursor=]` → `{sessions: [...], nextCursor}` (the
        caller's own; admin sees all)."""
        context = await caller_context(request, self.dispatcher)
        return json_response(
            await self.dispatcher.call("session/list", dict(request.query_params), context, query=True)
        )

    async def messages(self, request: Request) -> Response:
        """`GET /api/sessions/{id}/messages[?limit=&before=]` → `{sessionId, messages, total}`."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(request.query_params, request)
        return json_response(await self.dispatcher.call("session/messages", params, context, query=True))

    async def usage(self, request: Request) -> Response:
        """`GET /api/sessions/{id}/usage` → `{sessionId, total, turns}`: what the session's turns cost."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id({}, request)
        return json_response(await self.dispatcher.call("session/usage", params, context, query=True))

    async def prompt(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/prompt` with `{"prompt", "attachments"?}` → `{sessionId, stopReason, content}`
        when the turn ends. The session must exist: live (either mode) or a durable ACP one (rehydrated)."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(await json_object(request), request)
        self.dispatcher.admit("session/prompt", context)  # refused before the session is held
        async with self.turns.hold(params["sessionId"]):
            return json_response(await self.dispatcher.call("session/prompt", params, context))

    async def configure(self, request: Request) -> Response:
        """`PATCH /api/sessions/{id}` with `{agentAlias?, model?, temperature?}` → the session's effective settings
        (R-MODEL-4): stored with it, in force from its next provider step."""
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(await json_object(request), request)
        return json_response(await self.dispatcher.call("session/configure", params, context))

    async def fork(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/fork` with `{atIndex?}` → the new session (R-BRANCH-1)."""
        return await self._post("session/fork", request)

    async def rollback(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/rollback` with `{turns}` → what was rolled back (R-BRANCH-2)."""
        return await self._post("session/rollback", request)

    async def steer(self, request: Request) -> Response:
        """`POST /api/sessions/{id}/steer` with `{prompt}` → `{accepted, index?}`: the text joins the running turn
        (R-BRANCH-3)."""
        return await self._post("session/steer", request)

    async def _post(self, method: str, request: Request) -> Response:
        context = await caller_context(request, self.dispatcher)
        params = _with_session_id(await json_object(request), request)
        return json_response(await self.dispatcher.call(method, params, context))

    async def models(self, request: Request) -> Response:
        """`GET /api/models[?agentAlias=]` → `{models, current, error?}` (R-MODEL-3)."""
        context = await caller_context(request, self.dispatcher)
        return json_response(await self.dispatcher.call("models/list", dict(request.query_params), context, query=True))


def _with_session_id(data: Mapping[str, Any], request: Request) -> dict[str, Any]:
    return {**{k: v for k, v in data.items() if k not in _SESSION_ID_KEYS}, "sessionId": request.path_params["id"]}
