"""The OpenAI-compatible endpoint (R-ECO-1): `GET /v1/models`, `POST /v1/chat/completions`.

    GET  /v1/models              → {object: "list", data: [{id: "zeroclaw/<agent>", object: "model", ...}]}
    POST /v1/chat/completions    {model: "zeroclaw/<agent>", messages, stream?, stream_options?: {include_usage}}

Bearer = a paired token. Each request is one turn of a chat session: without `X-Zeroclaw-Session` a new chat
session is made (`session/new`, mode chat) and the request's earlier messages are given to it as the first prompt's
preamble; with the header the named session (the caller's, of this agent) goes on with the last user message. The
session's id comes back in `X-Zeroclaw-Session`. Everything goes through the one dispatcher (R-ARCH-3): the
session methods' admission, params, handlers and errors; failures come back in OpenAI's error shape
`{error: {message, type, param, code}}` with the matching status.

Tools run in the daemon under the agent's rules (R-GUARD); the caller can answer nothing, so a tool call that needs
a human is rejected at once unless another attached client of the same principal answers it (as for every HTTP
one-shot caller, gateway/rest/sessions.py). A streamed answer is the turn's `agent_message_chunk` updates as
`chat.completion.chunk`s; `turn_complete.usage` (R-MODEL-5) is OpenAI's `usage`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app.sessions.lifecycle.http_turns import HttpTurns
from gateway.auth import caller_context
from gateway.errors import ApiError, from_rpc_error
from gateway.rest.body import json_object
from gateway.rest.stream_channel import StreamChannel, count_stall
from rpc.core.context import CallContext, NoClient
from rpc.core.dispatcher import Dispatcher
from rpc.core.errors import RpcError

__all__ = ["SESSION_HEADER", "OpenAiApi", "openai_error"]

SESSION_HEADER = "X-Zeroclaw-Session"
MODEL_PREFIX = "zeroclaw/"
STALLED = (
    "The stream was cut off: it was not read for outbound_stall_secs. The turn went on in the daemon: its session "
    "(X-Zeroclaw-Session) has the whole answer"
)

_TYPE_OF_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error(
    status: int, message: str, code: str | None, param: str | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    """OpenAI's error shape with its status."""
    kind = _TYPE_OF_STATUS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type="application/json")


def _from_api_error(exc: ApiError) -> Response:
    param = exc.extra.get("field")
    return openai_error(exc.status, exc.message, exc.kind, str(param) if param else None, exc.headers)


class _UsageChannel(NoClient):
    """The channel of a completion that is not streamed: of the turn's updates it keeps only the last
    `turn_complete` (its usage), so a long turn costs no memory here."""

    __slots__ = ("last",)

    def __init__(self, principal_id: str | None) -> None:
        super().__init__(principal_id)
        self.last: bytes | None = None

    async def send_encoded(self, frames: list[bytes]) -> None:
        for frame in frames:
            if b'"turn_complete"' in frame:  # the type's value; decoded only if it is there
                self.last = frame


def _updates(frame: bytes) -> list[dict[str, Any]]:
    message = orjson.loads(frame)
    params = message.get("params") if isinstance(message, dict) else None
    if not isinstance(params, dict):
        return []
    update = params.get("update")
    return [update if isinstance(update, dict) else params]


def _usage(usage: Mapping[str, Any] | None) -> dict[str, int]:
    prompt = int((usage or {}).get("inputTokens", 0))
    completion = int((usage or {}).get("outputTokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _text(content: Any) -> str:
    """A message's content: a string, or OpenAI's list of parts (the text parts, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class OpenAiApi:
    def __init__(self, dispatcher: Dispatcher, turns: HttpTurns) -> None:
        self.dispatcher = dispatcher
        self.services = dispatcher.services
        self.turns = turns

    async def models(self, request: Request) -> Response:
        try:
            context = await caller_context(request, self.dispatcher)
        except ApiError as exc:
            return _from_api_error(exc)
        except RpcError as exc:
            return _from_api_error(from_rpc_error(exc))
        principal = context.principal
        created = int(time.time())
        data = [
            {"id": MODEL_PREFIX + agent, "object": "model", "created": created, "owned_by": "zeroclaw"}
            for agent in sorted(self.services.config.agents)
            if principal.may_use_agent(agent)
        ]
        return Response(orjson.dumps({"object": "list", "data": data}), media_type="application/json")

    async def chat_completions(self, request: Request) -> Response:
        try:
            return await self._chat(request)
        except ApiError as exc:
            return _from_api_error(exc)
        except RpcError as exc:
            return _from_api_error(from_rpc_error(exc))

    async def _chat(self, request: Request) -> Response:
        context = await caller_context(request, self.dispatcher)
        self.dispatcher.admit("session/prompt", context)
        body = await json_object(request)
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return openai_error(400, "`model` is required", "invalid_request_error", "model")
        agent = model.removeprefix(MODEL_PREFIX)
        if agent not in self.services.config.agents or not context.principal.may_use_agent(agent):
            return openai_error(404, f"The model `{model}` does not exist", "model_not_found", "model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return openai_error(400, "`messages` must be a non-empty list", "invalid_request_error", "messages")
        if messages[-1].get("role") != "user":
            return openai_error(400, "The last message must be the user's", "invalid_request_error", "messages")
        session_id = request.headers.get(SESSION_HEADER)
        prompt = _text(messages[-1].get("content"))
        if session_id is None:
            earlier = [f"{m.get('role', 'user')}: {_text(m.get('content'))}" for m in messages[:-1]]
            if earlier:
                prompt = "Conversation so far:\n" + "\n".join(earlier) + "\n\nuser: " + prompt
        stream = bool(body.get("stream"))
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        # the turn's updates come to the channel: its usage, and the chunks of a streamed answer
        stall_secs = self.dispatcher.limits.outbound_stall_secs
        channel = (
            StreamChannel(context.principal.id, stall_secs, count_stall(self.dispatcher, request))
            if stream
            else _UsageChannel(context.principal.id)
        )
        context.client = channel
        sid, created = await self._session(context, agent, session_id)
        headers = {SESSION_HEADER: sid}
        completion_id = "chatcmpl-" + uuid.uuid4().hex
        if isinstance(channel, _UsageChannel):
            async with self.turns.hold(sid, created=created):
                turn = await self.dispatcher.call("session/prompt", {"sessionId": sid, "prompt": prompt}, context)
            usage = None
            for update in _updates(channel.last) if channel.last is not None else []:
                if update.get("type") == "turn_complete" and update.get("sessionId") == sid:
                    usage = update.get("usage")
            answer = {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": turn["content"]},
                        "finish_reason": _finish(turn.get("stopReason")),
                    }
                ],
                "usage": _usage(usage),
            }
            return Response(orjson.dumps(answer), media_type="application/json", headers=headers)
        chunks = self._stream(context, channel, sid, created, prompt, completion_id, model, include_usage)
        return StreamingResponse(chunks, media_type="text/event-stream", headers=headers)

    async def _session(self, context: CallContext, agent: str, session_id: str | None) -> tuple[str, bool]:
        """The chat session of this request, and whether it was made for it."""
        if session_id is None:
            opened = await self.dispatcher.call("session/new", {"agentAlias": agent, "mode": "chat"}, context)
            return str(opened["sessionId"]), True
        principal = context.principal
        if await self.services.sessions.needs_chat_open(principal, session_id, agent):
            await self.dispatcher.call(
                "session/new", {"agentAlias": agent, "mode": "chat", "sessionId": session_id}, context
            )
        return session_id, False

    async def _stream(
        self,
        context: CallContext,
        channel: StreamChannel,
        sid: str,
        created: bool,
        prompt: str,
        completion_id: str,
        model: str,
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        now = int(time.time())

        def chunk(
            delta: dict[str, Any], finish: str | None = None, usage: Any = None, *, choices: bool = True
        ) -> bytes:
            body: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": now,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else [],
            }
            if include_usage:
                body["usage"] = usage
            return b"data: " + orjson.dumps(body) + b"\n\n"

        async def turn() -> Any:
            try:
                async with self.turns.hold(sid, created=created):
                    return await self.dispatcher.call("session/prompt", {"sessionId": sid, "prompt": prompt}, context)
            finally:
                channel.drop()  # the stream ends after what is queued

        task = asyncio.ensure_future(turn())
        try:
            yield chunk({"role": "assistant", "content": ""})
            usage = None
            stop = "end_turn"
            while frames := await channel.take():
                out = []
                for frame in frames:
                    for update in _updates(frame):
                        kind = update.get("type")
                        if kind == "agent_message_chunk" and update.get("sessionId") == sid:
                            out.append(chunk({"content": update.get("text", "")}))
                        elif kind == "turn_complete" and update.get("sessionId") == sid:
                            usage = update.get("usage")
                            stop = str(update.get("stopReason", stop))
                if out:
                    yield b"".join(out)  # what was queued goes out in one write
            if channel.cut_off:  # the reader stopped reading: what it missed is gone, so no answer is complete
                body = {"error": {"message": STALLED, "type": "server_error", "param": None, "code": "stalled"}}
                yield b"data: " + orjson.dumps(body) + b"\n\n"
                return
            try:
                result = await task
                stop = str(result.get("stopReason", stop))
            except RpcError as exc:
                error = from_rpc_error(exc)
                body = {"error": {"message": error.message, "type": "server_error", "param": None, "code": error.kind}}
                yield b"data: " + orjson.dumps(body) + b"\n\n"
                return
            yield chunk({}, _finish(stop))
            if include_usage:
                yield chunk({}, usage=_usage(usage), choices=False)
            yield b"data: [DONE]\n\n"
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task


def _finish(stop: Any) -> str:
    return {"max_tokens": "length", "max_turn_requests": "length", "cancelled": "stop"}.get(str(stop), "stop")
