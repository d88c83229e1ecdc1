"""`POST /webhook/{agent}` (R-GW-3): one turn on a chat session of `agent`, for scripts and integrations.

    body     {"message": str, "sessionId"?: str}
    result   {"sessionId", "content"}              when the turn ends (content = the final assistant text)

Access: a bearer token (401), the grant of `session/prompt` (`sessions:execute`, 403) and the agent right
(`may_use_agent`, 403 `forbidden` with `agent: true`); an agent that is not configured is 404 `not_found`.

Sessions: without `sessionId` a new chat session (`mode="chat"`, `surface="gateway"`) is created. With one it
must be the caller's chat session of this agent: a live one is used as is; a stored one (not live) is resumed;
an unknown id creates the chat session with that id, so a caller may choose its conversation ids. A closed or
killed one is gone (404 `session_not_found`), another principal's is 403 `session_not_owned`, and an ACP session
or a chat session of another agent is 400 `invalid_params` (field `sessionId`). The webhook needs no
`sessions:create`: R-GW-6 names exactly `sessions:execute` and the agent right.

Each call leaves the session as it found it: one it had to create or resume is released from the live table
after the turn (its chat record stays open and resumable), unless a client is watching it, so webhook
conversations never use up `max_sessions`. Tools that need approval are rejected at once (no client can
approve them); `ask_user`/`poll` get "no interactive client is attached" (see gateway/rest/sessions.py).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from app.sessions.errors import AgentNotAllowed
from app.sessions.lifecycle.http_turns import HttpTurns
from app.sessions.mode import SessionMode
from gateway.auth import caller_context
from gateway.errors import ApiError, json_response
from gateway.rest.body import json_object
from rpc.core.context import CallContext
from rpc.core.dispatcher import Dispatcher
from rpc.core.registry import Params, SessionId, validate

__all__ = ["WebhookApi", "WebhookBody"]


class WebhookBody(Params, frozen=True):
    message: str  # at most `[limits] max_prompt_chars` (`check_prompt`)
    session_id: SessionId | None = None


class WebhookApi:
    def __init__(self, dispatcher: Dispatcher, turns: HttpTurns) -> None:
        self.dispatcher = dispatcher
        self.services = dispatcher.services
        self.turns = turns

    async def webhook(self, request: Request) -> Response:
        context = await caller_context(request, self.dispatcher)
        self.dispatcher.admit("session/prompt", context)  # the grant of the turn, before a session is opened
        principal = context.principal
        agent = request.path_params["agent"]
        if not principal.may_use_agent(agent):
            raise AgentNotAllowed
        if agent not in self.services.config.agents:
            raise ApiError(404, "not_found", "Unknown agent")
        params = validate(WebhookBody, await json_object(request))
        sessions = self.services.sessions
        sessions.turns.check_prompt(params.message, field="message")
        if params.session_id is None:
            opened = await sessions.open(principal, agent_alias=agent, mode=SessionMode.CHAT, surface="gateway")
            session_id: str = opened.session.session_id
            async with self.turns.hold(session_id, created=True):
                outcome = await self._turn(context, session_id, params.message)
        else:
            session_id = params.session_id
            async with self.turns.hold(session_id):
                if await sessions.needs_chat_open(principal, session_id, agent):
                    await sessions.open(
                        principal, agent_alias=agent, session_id=session_id, mode=SessionMode.CHAT, surface="gateway"
                    )
                outcome = await self._turn(context, session_id, params.message)
        return json_response({"sessionId": session_id, "content": outcome["content"]})

    async def _turn(self, context: CallContext, session_id: str, message: str) -> dict[str, Any]:
        turn: dict[str, Any] = await self.dispatcher.call(
            "session/prompt", {"sessionId": session_id, "prompt": message}, context
        )
        return turn
