"""The OpenAPI 3.1 description served at `/openapi.json` (R-GW-2), written by hand: it is small, and a test
checks that every documented path exists and vice versa."""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_spec"]

_ERROR = {"$ref": "#/components/schemas/Error"}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Invalid request or params",
        401: "Missing or bad bearer token",
        403: "Missing grant or forbidden",
        413: "Body over 64 KiB",
        429: "Pairing locked out",
    }
    return {str(c): {"description": text[c], "content": {"application/json": {"schema": _ERROR}}} for c in codes}


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
                    "responses": _ok("Up", {"type": "object", "properties": {"status": {"const": "ok"}}}),
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
                                "user": {"type": "string", "description": "must match the code's user if given"},
                                "label": {"type": "string", "maxLength": 256},
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
                    "parameters": [{"name": "prop", "in": "query", "required": False, "schema": {"type": "string"}}],
                    "responses": {**_ok("Config", {"type": "object"}), **_errors(400, 401, 403)},
                }
            },
            "/api/config/{prop}": {
                "put": {
                    "summary": "Set one property (grant config:update and a config write path)",
                    "security": bearer,
                    "parameters": [{"name": "prop", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "requestBody": _body({"type": "object", "required": ["value"], "properties": {"value": {}}}),
                    "responses": {
                        **_ok(
                            "Set",
                            {"type": "object", "properties": {"prop": {"type": "string"}, "set": {"const": True}}},
                        ),
                        **_errors(400, 401, 403, 413),
                    },
                }
            },
            "/rpc": {
                "get": {
                    "summary": "JSON-RPC 2.0 over WebSocket: one message per text frame (initialize with authToken "
                    "or send Authorization: Bearer on the upgrade)",
                    "security": [],
                    "responses": {"101": {"description": "Switching Protocols"}, **_errors(400, 403)},
                }
            },
        },
    }
