"""The paths of the ecosystem routes (R-ECO): the OpenAI-compatible endpoint (gateway/rest/openai_api.py) and the
session event stream (gateway/rest/events.py). Their answers are other projects' shapes (OpenAI's models, completions,
chunks and errors; Server-Sent Events), written here as inline schemas."""

from __future__ import annotations

from typing import Any

from gateway.openapi.components import OpenApiComponents
from gateway.openapi.operations import BUSY, LIMIT, NOT_FOUND, TEXT_BOUND, answer, operation, request_body
from rpc.methods.session import AttachParams

__all__ = ["SSE_EVENT", "ecosystem_paths"]

# One Server-Sent Event, as an SSE parser reads it off the stream.
SSE_EVENT = {
    "type": "object",
    "title": "ServerSentEvent",
    "properties": {"event": {"type": "string"}, "id": {"type": "string"}, "data": {"type": "string"}},
}

_OPENAI_ERROR = {
    "type": "object",
    "title": "OpenAiError",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_SESSION_HEADER = {
    "X-Zeroclaw-Session": {"description": "The chat session of this conversation", "schema": {"type": "string"}}
}
_CHAT_REQUEST = {
    "type": "object",
    "title": "ChatCompletionRequest",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "description": "zeroclaw/<agent>", "pattern": "^zeroclaw/"},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"type": "string"}, "content": {}},
            },
        },
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
    },
}


_MODEL_LIST = {
    "type": "object",
    "title": "OpenAiModelList",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "title": "OpenAiModel",
                "required": ["id", "object", "created", "owned_by"],
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "model"},
                    "created": {"type": "integer"},
                    "owned_by": {"type": "string"},
                },
            },
        },
    },
}
_USAGE = {
    "type": "object",
    "title": "OpenAiUsage",
    "properties": {k: {"type": "integer"} for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
}
_COMPLETION = {
    "type": "object",
    "title": "OpenAiChatCompletion",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "message": {
                        "type": "object",
                        "properties": {"role": {"const": "assistant"}, "content": {"type": "string"}},
                    },
                    "finish_reason": {"type": "string"},
                },
            },
        },
        "usage": _USAGE,
    },
}


def _openai_errors(op: dict[str, Any]) -> dict[str, Any]:
    """The route's own errors are OpenAI's shape; the middleware's 400 (Host guard) and 413 (body limit) are ours."""
    for status, response in op["responses"].items():
        if int(status) >= 400 and status != "413":
            schema = response["content"]["application/json"]["schema"]
            ours = status == "400"
            response["content"]["application/json"]["schema"] = (
                {"anyOf": [schema, _OPENAI_ERROR]} if ours else _OPENAI_ERROR
            )
    return op


def ecosystem_paths(c: OpenApiComponents) -> dict[str, Any]:
    """`/api/sessions/{id}/events`, `/v1/models` and `/v1/chat/completions`."""
    header = {"name": "X-Zeroclaw-Session", "in": "header", "required": False, "schema": {"type": "string"}}
    completion = answer("A chat.completion, or with stream=true chat.completion.chunk events", _COMPLETION)
    completion["200"]["headers"] = _SESSION_HEADER
    completion["200"]["content"]["text/event-stream"] = {"schema": SSE_EVENT}
    session = c.parameters(AttachParams, "path", ["sessionId"])[0] | {"name": "id"}
    last = {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "integer", "minimum": 0}}
    events = {
        "200": {
            "description": "Server-Sent Events: id = seq, data = the session/update params; event: gap when the "
            "updates after Last-Event-ID are gone",
            "content": {"text/event-stream": {"schema": SSE_EVENT}},
        }
    }
    return {
        "/api/sessions/{id}/events": {
            "get": operation(
                "The session's updates as Server-Sent Events (session/attach, grant sessions:read); Last-Event-ID "
                "replays from the replay buffer; the token also as ?token= (EventSource)",
                events,
                bearer=True,
                parameters=[session, last],
                invalid="Last-Event-ID not a seq (invalid_params)",
                s403="Missing grant, Origin not allowed (forbidden), or another principal's session",
                s404=NOT_FOUND,
            ),
        },
        "/v1/models": {
            "get": _openai_errors(
                operation(
                    "OpenAI-compatible: the caller's agents as models zeroclaw/<agent> (OpenAI's error shape)",
                    answer("OpenAI's model list", _MODEL_LIST),
                    bearer=True,
                    invalid=None,
                )
            ),
        },
        "/v1/chat/completions": {
            "post": _openai_errors(
                operation(
                    "OpenAI-compatible: one turn of a chat session of the agent zeroclaw/<agent>; a new one seeded "
                    "with the earlier messages, or the one X-Zeroclaw-Session names (OpenAI's error shape)",
                    completion,
                    bearer=True,
                    parameters=[header],
                    body=request_body(_CHAT_REQUEST, description=TEXT_BOUND),
                    invalid="A malformed request (invalid_request_error)",
                    s404="Unknown model (model_not_found), or a closed or killed session (session_not_found)",
                    s409=BUSY,
                    s429=LIMIT,
                )
            ),
        },
    }
