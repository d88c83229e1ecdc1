"""The document's paths, one builder per group of routes, in the document's order (`PATH_GROUPS`).

Request schemas come from the params models the routes validate with: the RPC twins' (`rpc/methods/session.py`,
`rpc/methods/config.py`), the webhook's `WebhookBody` (`gateway/rest/webhook.py`) and `/pair`'s `PairBody`
(`gateway/rest/pairing.py`); answer schemas from the result models of `gateway/openapi/models.py` (and the config's
own `Config` model). What is written here is what no model holds: the paths, the summaries and the statuses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.config.schema import Config
from gateway.openapi import models as m
from gateway.openapi.components import OpenApiComponents
from gateway.openapi.ecosystem import ecosystem_paths
from gateway.openapi.operations import (
    BUSY,
    DOMAIN_400,
    INVALID,
    LIMIT,
    NOT_FOUND,
    NOT_OWNED,
    TEXT_BOUND,
    answer,
    operation,
    request_body,
)
from gateway.rest.pairing import PairBody
from gateway.rest.webhook import WebhookBody
from rpc.contract.json_schema import masked
from rpc.methods.branching import Forked, ForkParams, RollbackParams, RolledBack, Steered, SteerParams
from rpc.methods.config import GetParams, SetParams
from rpc.methods.discover import OpenRpcDocument
from rpc.methods.files import MAX_ATTACHMENTS  # not app.files: the gateway starts without it (issue 15)
from rpc.methods.models import ConfigureParams, ModelList, ModelsParams, SessionConfigured
from rpc.methods.session import ListParams, MessagesParams, PromptParams

__all__ = ["PATH_GROUPS"]


def _public_paths(c: OpenApiComponents) -> dict[str, Any]:
    """What answers without a token: liveness, this document, pairing."""
    code = {"type": "string", "pattern": m.PAIRING_CODE_PATTERN}
    return {
        "/health": {
            "get": operation("Liveness (no token)", answer("Up", c.ref(m.Health)), bearer=False, invalid=None),
        },
        "/openapi.json": {
            "get": operation(
                "This document (no token)", answer("OpenAPI", c.ref(m.OpenApiDocument)), bearer=False, invalid=None
            ),
        },
        "/openrpc.json": {
            "get": operation(
                "The JSON-RPC surface as an OpenRPC 1.3.2 document, as rpc.discover answers it (no token)",
                answer("OpenRPC", c.ref(OpenRpcDocument)),
                bearer=False,
                invalid=None,
            ),
        },
        "/pair": {
            "post": operation(
                "Trade a one-time 6-digit pairing code for a bearer token",
                answer("Paired", c.ref(m.PairedToken), 201),
                bearer=False,
                parameters=[{"name": "X-Pairing-Code", "in": "header", "required": True, "schema": code}],
                body=request_body(c.params(PairBody), required=False),
                invalid="a missing X-Pairing-Code header or a bad `user`/`label` (invalid_params)",
                s403="Wrong or expired pairing code, or its user no longer exists (forbidden)",
                s429="Pairing locked out after failed attempts (limit_exceeded, Retry-After)",
                s503="The new token cannot be stored: the database cannot be written (storage_unavailable)",
            ),
        },
    }


def _system_paths(c: OpenApiComponents) -> dict[str, Any]:
    """The daemon's status and metrics."""
    metrics = {
        "200": {
            "description": "Prometheus text exposition format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
    return {
        "/api/status": {
            "get": operation(
                "Daemon status, as the status method answers (grant system:read)",
                answer("Status", c.ref(m.Status)),
                bearer=True,
                invalid=None,
            ),
        },
        "/metrics": {
            "get": operation(
                "The daemon's metrics in the Prometheus text format, like system/metrics "
                "(grant system:read; docs/operations.md names the families)",
                metrics,
                bearer=True,
                invalid=None,
            ),
        },
    }


def _config_paths(c: OpenApiComponents) -> dict[str, Any]:
    """Reading the config (masked) and setting one property."""
    whole_or_one = {"anyOf": [c.ref(Config, masked), c.ref(m.ConfigProp)]}
    return {
        "/api/config": {
            "get": operation(
                "The config with secrets masked, or one property with ?prop= (grant config:read)",
                answer("The whole config (secrets masked as ***), or {prop, value} with ?prop=", whole_or_one),
                bearer=True,
                parameters=c.parameters(GetParams, "query", ["prop"]),
                invalid=f"{INVALID}; or an unknown property path",
            ),
        },
        "/api/config/{prop}": {
            "put": operation(
                "Set one property (grant config:update and a config write path)",
                answer("Set", c.ref(m.ConfigSet)),
                bearer=True,
                parameters=c.parameters(SetParams, "path", ["prop"]),
                body=request_body(c.params(SetParams, without=["prop"])),
                invalid=f"{INVALID}; or an unknown property or a value of the wrong type",
                s403="Missing grant, or the path is outside the caller's config write paths (forbidden)",
            ),
        },
    }


def _session_paths(c: OpenApiComponents) -> dict[str, Any]:
    """The session routes, each like its session/… twin; the path's `id` is the params' `sessionId`."""
    session_id = c.parameters(MessagesParams, "path", ["sessionId"])[0] | {"name": "id"}

    def session_action(
        summary: str, answered: dict[str, Any], params: type[Any], invalid: str, **statuses: Any
    ) -> dict[str, Any]:
        """`POST /api/sessions/{id}/<action>`: a session method's twin, its params but `sessionId` as the body."""
        body = request_body(c.params(params, without=["sessionId"]))
        return {
            "post": operation(
                summary,
                answered,
                bearer=True,
                parameters=[session_id],
                body=body,
                invalid=f"{INVALID}; or {invalid}",
                s403=NOT_OWNED,
                s404=NOT_FOUND,
                **statuses,
            )
        }

    prompt_body = c.params(PromptParams, without=["sessionId"])
    # The model leaves the count to the files service: its constant, until PromptParams carries it.
    prompt_body["properties"]["attachments"]["anyOf"][0]["maxItems"] = MAX_ATTACHMENTS
    return {
        "/api/sessions": {
            "get": operation(
                "One page of the caller's sessions, newest activity first, like session/list; admin sees all "
                "(grant sessions:read). `nextCursor` of the answer is the next page's `cursor`",
                answer("Sessions", c.ref(m.SessionList)),
                bearer=True,
                parameters=c.parameters(ListParams, "query", ["includeKilled", "mode", "query", "limit", "cursor"]),
                invalid=f"{INVALID}; or a `cursor` that is malformed or was given for another list",
            ),
        },
        "/api/sessions/{id}/messages": {
            "get": operation(
                "The visible transcript, like session/messages (grant sessions:read)",
                answer("Messages", c.ref(m.Messages)),
                bearer=True,
                parameters=[session_id, *c.parameters(MessagesParams, "query", ["limit", "before"])],
                s403=NOT_OWNED,
                s404=NOT_FOUND,
            ),
        },
        "/api/sessions/{id}": {
            "patch": operation(
                "Set the session's agent, model or temperature, like session/configure (grant sessions:execute): "
                "stored with it, in force from its next provider step, announced as config_changed. A setting "
                "left out stays; `model` or `temperature` null goes back to the agent's own",
                answer("The session's effective settings", c.ref(SessionConfigured)),
                bearer=True,
                parameters=[session_id],
                body=request_body(c.params(ConfigureParams, without=["sessionId"])),
                invalid=f"{INVALID}; or an unknown agent",
                s403="Missing grant (forbidden), an agent the caller may not use, or another principal's session",
                s404=NOT_FOUND,
            ),
        },
        "/api/sessions/{id}/fork": session_action(
            "Fork the session at a prompt (`atIndex`; absent: after its last finished turn) into a new session "
            "of the caller's, like session/fork (grant sessions:create)",
            answer("The new session", c.ref(Forked)),
            ForkParams,
            "an `atIndex` that is not a user prompt row",
        ),
        "/api/sessions/{id}/rollback": session_action(
            "Drop the last `turns` turns from what the model is given and the visible transcript (kept, "
            "marked), like session/rollback (grant sessions:execute); announced as rolled_back",
            answer("What was rolled back", c.ref(RolledBack)),
            RollbackParams,
            "more turns than the session has completed",
            s409=BUSY,
        ),
        "/api/sessions/{id}/steer": session_action(
            "Add a user message to the session's running turn, given to the model at its next provider step and "
            "stored there, like session/steer (grant sessions:execute); announced as user_message. "
            "`accepted:false` when the turn ended before taking it",
            answer("Whether the text joined the turn, and its transcript index", c.ref(Steered)),
            SteerParams,
            "no turn is running on the session",
        ),
        "/api/models": {
            "get": operation(
                "The models the agent's provider serves (its configured one always among them), like models/list "
                "(grant sessions:read); `error` says why the provider could not list them",
                answer("Models", c.ref(ModelList)),
                bearer=True,
                parameters=c.parameters(ModelsParams, "query", ["agentAlias"]),
                invalid=f"{INVALID}; or an unknown agent",
                s403="Missing grant, or an agent the caller may not use (forbidden)",
            ),
        },
        "/api/sessions/{id}/usage": {
            "get": operation(
                "What the session's turns cost: tokens and USD per turn and their total, like session/usage "
                "(grant sessions:read)",
                answer("Usage", c.ref(m.SessionUsage)),
                bearer=True,
                parameters=[session_id],
                s403=NOT_OWNED,
                s404=NOT_FOUND,
            ),
        },
        "/api/sessions/{id}/prompt": {
            "post": operation(
                "Run one turn and answer when it ends, like session/prompt (grant sessions:execute). "
                "Tools that need approval are rejected at once unless auto-approved or a client of the same "
                "principal watches the session; elicitation answers 'no interactive client is attached'",
                answer("The turn's final result", c.ref(m.PromptResult)),
                bearer=True,
                parameters=[session_id],
                body=request_body(
                    prompt_body, description=f"{TEXT_BOUND}; `attachments` are file/attach entries of this session"
                ),
                invalid=DOMAIN_400,
                s403=NOT_OWNED,
                s404=NOT_FOUND,
                s409=BUSY,
                s429=LIMIT,
            ),
        },
    }


def _webhook_paths(c: OpenApiComponents) -> dict[str, Any]:
    """`POST /webhook/{agent}`: one turn on a chat session of the agent."""
    agent = {"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "/webhook/{agent}": {
            "post": operation(
                "Run one turn on a chat session of the agent (grant sessions:execute and the agent "
                "right): a new session without sessionId; with one, the caller's chat session of that agent "
                "(created with that id when unknown)",
                answer("The turn's final text", c.ref(m.WebhookResult)),
                bearer=True,
                parameters=[agent],
                body=request_body(c.params(WebhookBody), description=TEXT_BOUND),
                invalid=f"{DOMAIN_400}; or a sessionId naming an ACP session or another agent's",
                s403="Missing grant or agent right (forbidden), or another principal's session",
                s404="Unknown agent (not_found), or a closed or killed chat session",
                s409=BUSY,
                s429=LIMIT,
            ),
        },
    }


def _rpc_paths(c: OpenApiComponents) -> dict[str, Any]:
    """`GET /rpc` and `GET /acp` with their plain-HTTP answers (the WebSockets are outside this document)."""
    return {
        "/rpc": {
            "get": operation(
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
            "get": operation(
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


PATH_GROUPS: tuple[Callable[[OpenApiComponents], dict[str, Any]], ...] = (
    _public_paths,
    _system_paths,
    _config_paths,
    _session_paths,
    _webhook_paths,
    ecosystem_paths,
    _rpc_paths,
)
