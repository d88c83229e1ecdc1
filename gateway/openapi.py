"""The OpenAPI 3.1 description served at `/openapi.json` (R-GW-2), written by hand: it is small, and a test
checks that every documented path exists and vice versa."""

from __future__ import annotations

from typing import Any

from app.config.props import MAX_PROP_CHARS

__all__ = ["openapi_spec"]

_ERROR = {"$ref": "#/components/schemas/Error"}
# A property path such as `limits.max_sessions` (as `config/get` and `config/set`); unknown paths are 400.
_PROP = {"type": "string", "minLength": 1, "maxLength": MAX_PROP_CHARS}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Invalid request or params",
        401: "Missing or bad bearer token",
        403: "Missing grant or forbidden",
        413: "Body over 64 KiB",
        426: "Not a WebSocket upgrade request",
        429: "Pairing locked out",
    }
    return {str(c): {"description": text[c], "content": {"application/json": {"schema": _ERROR}}} for c in codes}


def _error(code: int, description: str) -> dict[str, Any]:
    return {str(code): {"description": description, "content": {"application/json": {"schema": _ERROR}}}}


# The whole request body is limited to 64 KiB (413, R-GW-6), so a longer text can never be sent; the limit
# counts bytes of JSON (escapes and UTF-8 included), which a schema cannot state, so a shorter one may still be 413.
_MAX_TEXT = 65536
_ATTACHMENT = {
    "type": "object",
    "description": "A file/attach entry of this session's workspace (snake_case or camelCase keys)",
    "properties": {
        "ref_id": {"type": "string", "pattern": "^sha256:[0-9A-Fa-f]{64}$"},
        "workspace_path": {"type": "string"},
        "marker": {"type": "string"},
    },
}

_SESSION_ID = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"}
_SESSION_ID_PARAM = {"name": "id", "in": "path", "required": True, "schema": _SESSION_ID}


def _session_paths(bearer: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The session routes and the webhook (R-GW-2, R-GW-3); shapes as their RPC twins (SPEC §7.1)."""
    busy = _error(409, "A turn is already running on the session (session_busy)")
    not_found = _error(404, "Unknown, killed or deleted session, or a closed chat session (session_not_found)")
    not_owned = _error(403, "Missing grant (forbidden) or another principal's session (session_not_owned)")
    limit = _error(429, "Live-session limit reached (session_limit)")
    prompt_result = {"$ref": "#/components/schemas/PromptResult"}
    return {
        "/api/sessions": {
            "get": {
                "summary": "The caller's sessions, like session/list; admin sees all (grant sessions:read)",
                "security": bearer,
                "parameters": [
                    {"name": "includeKilled", "in": "query", "required": False, "schema": {"type": "boolean"}}
                ],
                "responses": {
                    **_ok("Sessions", {"$ref": "#/components/schemas/SessionList"}),
                    **_errors(400, 401, 403),
                },
            }
        },
        "/api/sessions/{id}/messages": {
            "get": {
                "summary": "The visible transcript, like session/messages (grant sessions:read)",
                "security": bearer,
                "parameters": [
                    _SESSION_ID_PARAM,
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 100},
                    },
                    {
                        "name": "before",
                        "in": "query",
                        "required": False,
                        # session/messages' own bound: SQLite integers are 64-bit
                        "schema": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                        "description": "an index, exclusive",
                    },
                ],
                "responses": {
                    **_ok("Messages", {"$ref": "#/components/schemas/Messages"}),
                    **_errors(400, 401),
                    **not_owned,
                    **not_found,
                },
            }
        },
        "/api/sessions/{id}/prompt": {
            "post": {
                "summary": "Run one turn and answer when it ends, like session/prompt (grant sessions:execute). "
                "Tools that need approval are rejected at once unless auto-approved or a client of the same "
                "principal watches the session; elicitation answers 'no interactive client is attached'",
                "security": bearer,
                "parameters": [_SESSION_ID_PARAM],
                "requestBody": _body(
                    {
                        "type": "object",
                        "required": ["prompt"],
                        "properties": {
                            "prompt": {"type": "string", "maxLength": _MAX_TEXT},
                            "attachments": {"type": ["array", "null"], "maxItems": 64, "items": _ATTACHMENT},
                        },
                    }
                ),
                "responses": {
                    **_ok("The turn's final result", prompt_result),
                    **_errors(400, 401),
                    **not_owned,
                    **not_found,
                    **busy,
                    **_errors(413),
                    **limit,
                },
            }
        },
        "/webhook/{agent}": {
            "post": {
                "summary": "Run one turn on a chat session of the agent (grant sessions:execute and the agent "
                "right): a new session without sessionId; with one, the caller's chat session of that agent "
                "(created with that id when unknown)",
                "security": bearer,
                "parameters": [{"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": _body(
                    {
                        "type": "object",
                        "required": ["message"],
                        "properties": {
                            "message": {"type": "string", "maxLength": _MAX_TEXT},
                            "sessionId": {**_SESSION_ID, "type": ["string", "null"]},
                        },
                    }
                ),
                "responses": {
                    **_ok(
                        "The turn's final text",
                        {
                            "type": "object",
                            "required": ["sessionId", "content"],
                            "properties": {"sessionId": {"type": "string"}, "content": {"type": "string"}},
                        },
                    ),
                    **_errors(400, 401),
                    **_error(403, "Missing grant or agent right (forbidden), or another principal's session"),
                    **_error(404, "Unknown agent (not_found), or a closed or killed chat session"),
                    **busy,
                    **_errors(413),
                    **limit,
                },
            }
        },
    }


def _ok(description: str, schema: dict[str, Any], status: int = 200) -> dict[str, Any]:
    return {str(status): {"description": description, "content": {"application/json": {"schema": schema}}}}


def _body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def openapi_spec(version: str) -> dict[str, Any]:
    bearer: list[dict[str, list[str]]] = [{"bearer": []}]
    any_json: dict[str, Any] = {}
    return {
        "openapi": "3.1.0",
        "info": {"title": "zeroclaw gateway", "version": version},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "zc_<64 hex>"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["kind", "message"],
                            "properties": {"kind": {"type": "string"}, "message": {"type": "string"}},
                            "additionalProperties": True,
                        }
                    },
                },
                "SessionList": {
                    "type": "object",
                    "required": ["sessions"],
                    "properties": {
                        "sessions": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": [
                                    "sessionId",
                                    "agentAlias",
                                    "mode",
                                    "live",
                                    "killed",
                                    "createdAt",
                                    "lastActivity",
                                    "messageCount",
                                ],
                                "properties": {
                                    "sessionId": {"type": "string"},
                                    "agentAlias": {"type": "string"},
                                    "mode": {"enum": ["acp", "chat"]},
                                    "live": {"type": "boolean"},
                                    "killed": {"type": "boolean"},
                                    "createdAt": {"type": "string", "format": "date-time"},
                                    "lastActivity": {"type": "string", "format": "date-time"},
                                    "messageCount": {"type": "integer"},
                                },
                            },
                        }
                    },
                },
                "Messages": {
                    "type": "object",
                    "required": ["sessionId", "messages", "total"],
                    "properties": {
                        "sessionId": {"type": "string"},
                        "total": {"type": "integer"},
                        "messages": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["index", "role", "content"],
                                "properties": {
                                    "index": {"type": "integer"},
                                    "role": {"type": "string"},
                                    "content": {"type": "string"},
                                    "toolCallId": {"type": "string"},
                                    "name": {"type": "string"},
                                    "marker": {"type": "string"},
                                },
                            },
                        },
                    },
                },
                "PromptResult": {
                    "type": "object",
                    "required": ["sessionId", "stopReason", "content"],
                    "properties": {
                        "sessionId": {"type": "string"},
                        "stopReason": {"enum": ["end_turn", "cancelled", "failed", "max_turns"]},
                        "content": {"type": "string"},
                    },
                },
                "PairedToken": {
                    "type": "object",
                    "required": ["tokenId", "token", "user", "createdAt"],
                    "properties": {
                        "tokenId": {"type": "string"},
                        "token": {"type": "string", "pattern": "^zc_[0-9a-f]{64}$"},
                        "user": {"type": "string"},
                        "createdAt": {"type": "string", "format": "date-time"},
                    },
                },
            },
        },
        "paths": {
            "/health": {
                "get": {
                    "summary": "Liveness (no token)",
                    "security": [],
                    "responses": _ok(
                        "Up", {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}
                    ),
                }
            },
            "/openapi.json": {
                "get": {"summary": "This document (no token)", "security": [], "responses": _ok("OpenAPI", any_json)}
            },
            "/pair": {
                "post": {
                    "summary": "Trade a one-time 6-digit pairing code for a bearer token",
                    "security": [],
                    "parameters": [
                        {
                            "name": "X-Pairing-Code",
                            "in": "header",
                            "required": True,
                            "schema": {"type": "string", "pattern": "^[0-9]{6}$"},
                        }
                    ],
                    "requestBody": _body(
                        {
                            "type": "object",
                            "properties": {
                                "user": {
                                    "type": ["string", "null"],
                                    "minLength": 1,
                                    "maxLength": 128,
                                    "description": "must match the code's user if given",
                                },
                                "label": {"type": ["string", "null"], "minLength": 1, "maxLength": 256},
                            },
                        },
                        required=False,
                    ),
                    "responses": {
                        **_ok("Paired", {"$ref": "#/components/schemas/PairedToken"}, 201),
                        **_errors(400, 403, 413, 429),
                    },
                }
            },
            "/api/status": {
                "get": {
                    "summary": "Daemon status (grant system:read)",
                    "security": bearer,
                    "responses": {**_ok("Status", {"type": "object"}), **_errors(401, 403)},
                }
            },
            "/api/config": {
                "get": {
                    "summary": "The config with secrets masked, or one property with ?prop= (grant config:read)",
                    "security": bearer,
                    "parameters": [{"name": "prop", "in": "query", "required": False, "schema": _PROP}],
                    "responses": {**_ok("Config", {"type": "object"}), **_errors(400, 401, 403)},
                }
            },
            "/api/config/{prop}": {
                "put": {
                    "summary": "Set one property (grant config:update and a config write path)",
                    "security": bearer,
                    "parameters": [{"name": "prop", "in": "path", "required": True, "schema": _PROP}],
                    "requestBody": _body({"type": "object", "required": ["value"], "properties": {"value": {}}}),
                    "responses": {
                        **_ok(
                            "Set",
                            {
                                "type": "object",
                                "required": ["prop", "set"],
                                "properties": {"prop": {"type": "string"}, "set": {"const": True}},
                            },
                        ),
                        **_errors(400, 401, 403, 413),
                    },
                }
            },
            **_session_paths(bearer),
            "/rpc": {
                "get": {
                    "summary": "JSON-RPC 2.0 over WebSocket: one message per text frame (initialize with authToken "
                    "or send Authorization: Bearer on the upgrade)",
                    "security": [],
                    "responses": {"101": {"description": "Switching Protocols"}, **_errors(400, 403, 426)},
                }
            },
        },
    }
