"""The OpenAPI 3.1 description served at `/openapi.json` (R-GW-2), generated from models:

* request schemas (path and query parameters, bodies) from the params models the routes validate with — the RPC
  twins' (`rpc/methods/session.py`, `rpc/methods/config.py`), the webhook's `WebhookBody`, and `/pair`'s
  `PairBody` (`gateway/rest.py`);
* answer schemas from the result models of `gateway/openapi_models.py` (and the config's own `Config` model),
  with every `$defs` hoisted into `components/schemas`.

Every model is a msgspec Struct, described by the generator the OpenRPC document shares (rpc/contract/json_schema.py).

So a length, a pattern or a bound is stated once, in the model. What stays written here is the part no model
holds: paths, summaries, and which statuses each operation can answer (the middleware's 400 and 413 on every
one, 401/403/503 wherever a bearer token is resolved). A test checks that every documented path exists and vice
versa, that no 2xx answer is a bare object, and that the statuses are listed (test_gateway_openapi.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from app.config.schema import Config
from gateway import openapi_models as m
from rpc.contract.json_schema import REF, Components, JsonSchema, Model, masked
from rpc.methods.config import GetParams, SetParams
from rpc.methods.discover import OpenRpcDocument
from rpc.methods.files import MAX_ATTACHMENTS  # not app.files: the gateway starts without it (issue 15)
from rpc.methods.session import ListParams, MessagesParams, PromptParams

__all__ = ["openapi_spec"]


def _not_null(schema: JsonSchema) -> JsonSchema:
    """An optional parameter's schema without its `null` branch: absence is how a query says None."""
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k != "anyOf" and not (k == "default" and v is None)}
    if len(branches) == 1:
        return {**branches[0], **rest}
    return {**rest, "anyOf": branches} if branches else rest


class _Components(Components):
    """The shared components, plus OpenAPI's parameters."""

    def parameters(self, model: Model, where: str, names: Iterable[str]) -> list[JsonSchema]:
        """OpenAPI parameters (`where`: path or query) for the properties `names` of `model`."""
        schema = self.schema(model)
        required = set(schema.get("required", ()))
        out = []
        for name in names:
            prop = schema["properties"][name]
            param: JsonSchema = {"name": name, "in": where, "required": where == "path" or name in required}
            if "description" in prop:
                param["description"] = prop["description"]
            param["schema"] = _not_null({k: v for k, v in prop.items() if k != "description"})
            out.append(param)
        return out


# -- statuses --------------------------------------------------------------------------------------

_ERROR = {"$ref": REF.format(name="ErrorAnswer")}
_HOST = "Host not allowed (the DNS-rebinding guard) or a malformed Content-Length (invalid_request)"
_INVALID = "invalid_params: a field fails its params model (`errors` names the fields), or a body that is not an object"
_STATUS_TEXT = {
    401: "Missing, malformed, unknown or revoked bearer token (auth_required)",
    403: "Missing grant (forbidden, `grant`)",
    413: "Request body over 64 KiB (limit_exceeded, name body); counted in bytes of JSON",
    503: "The database cannot be reached to check the token or do the work (storage_unavailable)",
}


def _error(status: int, description: str) -> dict[str, Any]:
    return {str(status): {"description": description, "content": {"application/json": {"schema": _ERROR}}}}


def _responses(ok: dict[str, Any], *, bearer: bool, invalid: str | None = _INVALID, **specific: str) -> dict[str, Any]:
    """`ok`, then every error status the operation can answer: the middleware's 400 (Host guard) and 413 on
    every operation, 401/403/503 with a bearer token, and `specific` (`s404="…"`) as the route adds."""
    out = dict(ok)
    out |= _error(400, f"{_HOST}; or {invalid}" if invalid else _HOST)
    texts = {status: text for status, text in _STATUS_TEXT.items() if bearer or status == 413}
    texts |= {int(key.removeprefix("s")): text for key, text in specific.items()}
    for status in sorted(texts):
        out |= _error(status, texts[status])
    return out


def _ok(description: str, schema: JsonSchema, status: int = 200) -> dict[str, Any]:
    return {str(status): {"description": description, "content": {"application/json": {"schema": schema}}}}


def _body(schema: JsonSchema, required: bool = True, description: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"required": required, "content": {"application/json": {"schema": schema}}}
    if description:
        body["description"] = description
    return body


_TEXT_BOUND = (
    "The text is at most `[limits] max_prompt_chars` characters (400 invalid_params beyond), and the whole body "
    "at most 64 KiB of JSON (413)"
)
_DOMAIN_400 = f"{_INVALID}; or a value the domain refuses (unknown property, wrong type, too long a prompt)"
_BUSY = "A turn is already running on the session (session_busy)"
_NOT_FOUND = "Unknown, killed or deleted session, or a closed chat session (session_not_found)"
_NOT_OWNED = "Missing grant (forbidden) or another principal's session (session_not_owned)"
_LIMIT = "Live-session limit reached (session_limit)"
_BEARER: list[dict[str, list[str]]] = [{"bearer": []}]


def _operation(
    summary: str,
    ok: dict[str, Any],
    *,
    bearer: bool,
    parameters: list[JsonSchema] | None = None,
    body: dict[str, Any] | None = None,
    invalid: str | None = _INVALID,
    **specific: str,
) -> dict[str, Any]:
    """One operation: `summary`, its security (the bearer token or none), `parameters`, the request `body`, and
    `ok` followed by the error statuses (`_responses`, given `bearer`, `invalid` and `specific`)."""
    op: dict[str, Any] = {"summary": summary, "security": _BEARER if bearer else []}
    if parameters is not None:
        op["parameters"] = parameters
    if body is not None:
        op["requestBody"] = body
    op["responses"] = _responses(ok, bearer=bearer, invalid=invalid, **specific)
    return op


# -- paths, one builder per group, in the document's order -----------------------------------------


def _public_paths(c: _Components) -> dict[str, Any]:
    """What answers without a token: liveness, this document, pairing."""
    from gateway.rest import PairBody  # not at the top: gateway.rest imports this module

    code = {"type": "string", "pattern": m.PAIRING_CODE_PATTERN}
    return {
        "/health": {
            "get": _operation("Liveness (no token)", _ok("Up", c.ref(m.Health)), bearer=False, invalid=None),
        },
        "/openapi.json": {
            "get": _operation(
                "This document (no token)", _ok("OpenAPI", c.ref(m.OpenApiDocument)), bearer=False, invalid=None
            ),
        },
        "/openrpc.json": {
            "get": _operation(
                "The JSON-RPC surface as an OpenRPC 1.3.2 document, as rpc.discover answers it (no token)",
                _ok("OpenRPC", c.ref(OpenRpcDocument)),
                bearer=False,
                invalid=None,
            ),
        },
        "/pair": {
            "post": _operation(
                "Trade a one-time 6-digit pairing code for a bearer token",
                _ok("Paired", c.ref(m.PairedToken), 201),
                bearer=False,
                parameters=[{"name": "X-Pairing-Code", "in": "header", "required": True, "schema": code}],
                body=_body(c.params(PairBody), required=False),
                invalid="a missing X-Pairing-Code header or a bad `user`/`label` (invalid_params)",
                s403="Wrong or expired pairing code, or its user no longer exists (forbidden)",
                s429="Pairing locked out after failed attempts (limit_exceeded, Retry-After)",
                s503="The new token cannot be stored: the database cannot be written (storage_unavailable)",
            ),
        },
    }


def _system_paths(c: _Components) -> dict[str, Any]:
    """The daemon's status and metrics."""
    metrics = {
        "200": {
            "description": "Prometheus text exposition format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
    return {
        "/api/status": {
            "get": _operation(
                "Daemon status, as the status method answers (grant system:read)",
                _ok("Status", c.ref(m.Status)),
                bearer=True,
                invalid=None,
            ),
        },
        "/metrics": {
            "get": _operation(
                "The daemon's metrics in the Prometheus text format, like system/metrics "
                "(grant system:read; docs/operations.md names the families)",
                metrics,
                bearer=True,
                invalid=None,
            ),
        },
    }


def _config_paths(c: _Components) -> dict[str, Any]:
    """Reading the config (masked) and setting one property."""
    whole_or_one = {"anyOf": [c.ref(Config, masked), c.ref(m.ConfigProp)]}
    return {
        "/api/config": {
            "get": _operation(
                "The config with secrets masked, or one property with ?prop= (grant config:read)",
                _ok("The whole config (secrets masked as ***), or {prop, value} with ?prop=", whole_or_one),
                bearer=True,
                parameters=c.parameters(GetParams, "query", ["prop"]),
                invalid=f"{_INVALID}; or an unknown property path",
            ),
        },
        "/api/config/{prop}": {
            "put": _operation(
                "Set one property (grant config:update and a config write path)",
                _ok("Set", c.ref(m.ConfigSet)),
                bearer=True,
                parameters=c.parameters(SetParams, "path", ["prop"]),
                body=_body(c.params(SetParams, without=["prop"])),
                invalid=f"{_INVALID}; or an unknown property or a value of the wrong type",
                s403="Missing grant, or the path is outside the caller's config write paths (forbidden)",
            ),
        },
    }


def _session_paths(c: _Components) -> dict[str, Any]:
    """The session routes, each like its session/… twin; the path's `id` is the params' `sessionId`."""
    session_id = c.parameters(MessagesParams, "path", ["sessionId"])[0] | {"name": "id"}
    prompt_body = c.params(PromptParams, without=["sessionId"])
    # The model leaves the count to the files service: its constant, until PromptParams carries it.
    prompt_body["properties"]["attachments"]["anyOf"][0]["maxItems"] = MAX_ATTACHMENTS
    return {
        "/api/sessions": {
            "get": _operation(
                "One page of the caller's sessions, newest activity first, like session/list; admin sees all "
                "(grant sessions:read). `nextCursor` of the answer is the next page's `cursor`",
                _ok("Sessions", c.ref(m.SessionList)),
                bearer=True,
                parameters=c.parameters(ListParams, "query", ["includeKilled", "mode", "query", "limit", "cursor"]),
                invalid=f"{_INVALID}; or a `cursor` that is malformed or was given for another list",
            ),
        },
        "/api/sessions/{id}/messages": {
            "get": _operation(
                "The visible transcript, like session/messages (grant sessions:read)",
                _ok("Messages", c.ref(m.Messages)),
                bearer=True,
                parameters=[session_id, *c.parameters(MessagesParams, "query", ["limit", "before"])],
                s403=_NOT_OWNED,
                s404=_NOT_FOUND,
            ),
        },
        "/api/sessions/{id}/prompt": {
            "post": _operation(
                "Run one turn and answer when it ends, like session/prompt (grant sessions:execute). "
                "Tools that need approval are rejected at once unless auto-approved or a client of the same "
                "principal watches the session; elicitation answers 'no interactive client is attached'",
                _ok("The turn's final result", c.ref(m.PromptResult)),
                bearer=True,
                parameters=[session_id],
                body=_body(
                    prompt_body, description=f"{_TEXT_BOUND}; `attachments` are file/attach entries of this session"
                ),
                invalid=_DOMAIN_400,
                s403=_NOT_OWNED,
                s404=_NOT_FOUND,
                s409=_BUSY,
                s429=_LIMIT,
            ),
        },
    }


def _webhook_paths(c: _Components) -> dict[str, Any]:
    """`POST /webhook/{agent}`: one turn on a chat session of the agent."""
    from gateway.webhook import WebhookBody  # not at the top: it imports gateway.rest, which imports this module

    agent = {"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "/webhook/{agent}": {
            "post": _operation(
                "Run one turn on a chat session of the agent (grant sessions:execute and the agent "
                "right): a new session without sessionId; with one, the caller's chat session of that agent "
                "(created with that id when unknown)",
                _ok("The turn's final text", c.ref(m.WebhookResult)),
                bearer=True,
                parameters=[agent],
                body=_body(c.params(WebhookBody), description=_TEXT_BOUND),
                invalid=f"{_DOMAIN_400}; or a sessionId naming an ACP session or another agent's",
                s403="Missing grant or agent right (forbidden), or another principal's session",
                s404="Unknown agent (not_found), or a closed or killed chat session",
                s409=_BUSY,
                s429=_LIMIT,
            ),
        },
    }


def _rpc_paths(c: _Components) -> dict[str, Any]:
    """`GET /rpc` and `GET /acp` with their plain-HTTP answers (the WebSockets are outside this document)."""
    return {
        "/rpc": {
            "get": _operation(
                "JSON-RPC 2.0 over WebSocket: one message per text frame (initialize with authToken "
                "or send Authorization: Bearer on the upgrade)",
                {"101": {"description": "Switching Protocols"}},
                bearer=False,
                invalid=None,
                s403="Origin not allowed (forbidden)",
                s426="Not a WebSocket upgrade request (invalid_request, Upgrade: websocket)",
            ),
        },
        "/acp": {
            "get": _operation(
                "The Agent Client Protocol v1 over WebSocket (docs/acp.md): subprotocol zeroclaw.acp.v1; the "
                "token by Authorization: Bearer, a bearer.<token> subprotocol entry or ?token=; ?agent=ALIAS",
                {"101": {"description": "Switching Protocols"}},
                bearer=False,
                invalid=None,
                s403="Origin not allowed (forbidden)",
                s426="Not a WebSocket upgrade request (invalid_request, Upgrade: websocket)",
            ),
        },
    }


_PATH_GROUPS: tuple[Callable[[_Components], dict[str, Any]], ...] = (
    _public_paths,
    _system_paths,
    _config_paths,
    _session_paths,
    _webhook_paths,
    _rpc_paths,
)


def openapi_spec(version: str) -> dict[str, Any]:
    """The document (a fresh copy: generating it walks a dozen models, ~10 ms, once per version)."""
    return copy.deepcopy(_spec(version))


@cache
def _spec(version: str) -> dict[str, Any]:
    c = _Components()
    c.ref(m.ErrorAnswer)  # every error status refers to it (`_ERROR`)
    paths: dict[str, Any] = {}
    for group in _PATH_GROUPS:
        paths |= group(c)
    return {
        "openapi": "3.1.0",
        "info": {"title": "zeroclaw gateway", "version": version},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "zc_<64 hex>"}},
            "schemas": dict(sorted(c.schemas.items())),
        },
        "paths": paths,
    }
