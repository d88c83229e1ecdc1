"""The OpenRPC 1.3.2 document of the JSON-RPC surface (R-DISC-1), generated from the registry that dispatches:
its methods, their params models (by name, one content descriptor per field), grants, local-only flags and
contracts (`rpc.core.registry.Contract`: summary, result model, the errors each adds, all declared on the method's
registry line); `rpc.core.error_kinds` (every error's code and `data` shape) and `rpc.contract.traffic` (the
daemon→client notifications and requests).

Decisions where OpenRPC is silent (docs/protocol.md, "The machine-readable contract"):
* An error object's `data` holds the JSON Schema of the error's `data` (its `kind` and what the kind adds):
  OpenRPC gives error objects no other place for a shape, and allows no extensions on them.
* `x-grant` (the grant a call needs; null: none), `x-local-only` (not served over the gateway's WebSocket),
  `x-notifications` and `x-server-requests` are declared in `x-extensions`, as the OpenRPC Specification
  Extension spec has it, so `@open-rpc/schema-utils-js` validates them. On the document they list all the
  daemon→client traffic; on a method, what that call causes.
* Every schema a generator turns into a type has a `title` (R-ECO-3: types get names, not hashes): a component
  its model's name, an inline param `<Method>Params<Param>`, an inline result `<Method>Result`, a notification's
  or server request's inline params `<Name>Params` (and result), an error's `data` `<Kind>ErrorData`, and every
  schema inside one after its path (`SessionRowTitleString`); a `$ref` is named by its target
  (`rpc.contract.names`). No title names two different schemas (test_openrpc.py).
* Errors every method can answer (-32603; -32602, as positional params are refused; -32010 before
  `initialize`; -32012 without the grant) are listed on each method, from its declaration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpc.contract.json_schema import Components, JsonSchema, masked
from rpc.contract.names import pascal, titled
from rpc.contract.traffic import NOTIFICATIONS, SERVER_REQUESTS, Traffic
from rpc.core.error_kinds import ERROR_KINDS
from rpc.core.registry import Contract, MethodSpec, Registry

__all__ = ["OPENRPC_VERSION", "openrpc_document"]

OPENRPC_VERSION = "1.3.2"
_ERROR_REF = "#/components/errors/{kind}"

_TRAFFIC_SCHEMA: JsonSchema = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "params"],
        "properties": {
            "name": {"type": "string"},
            "summary": {"type": "string"},
            "params": {"type": "object", "description": "the JSON Schema of the message's params (an object)"},
            "result": {"type": "object", "description": "a request's: the JSON Schema of its answer's result"},
        },
    },
}


def _extension(name: str, version: str, summary: str, schema: JsonSchema) -> JsonSchema:
    return {
        "openrpcExtension": "0.0.0-development",
        "name": name,
        "version": version,
        "summary": summary,
        "restricted": ["methodObject"],
        "schema": schema,
    }


_EXTENSIONS = [
    _extension("x-grant", "1.0.0", "The grant a call needs (null: none)", {"type": ["string", "null"]}),
    _extension("x-local-only", "1.0.0", "Served on the local endpoint only, not over the gateway", {"type": "boolean"}),
    _extension(
        "x-notifications", "1.0.0", "Notifications the daemon sends (on a method: that it causes)", _TRAFFIC_SCHEMA
    ),
    _extension(
        "x-server-requests", "1.0.0", "Requests the daemon makes (on a method: that it may make)", _TRAFFIC_SCHEMA
    ),
]


def openrpc_document(registry: Registry, *, version: str, servers: Sequence[Mapping[str, str]] = ()) -> JsonSchema:
    """The document of `registry`'s methods, in their names' order; `servers`: where they are served."""
    c = Components()
    errors = {kind: _error(c, kind) for kind in ERROR_KINDS}
    notifications = {name: _traffic(c, name, traffic) for name, traffic in NOTIFICATIONS.items()}
    requests = {name: _traffic(c, name, traffic) for name, traffic in SERVER_REQUESTS.items()}
    methods = []
    for spec in registry.specs():
        methods.append(_method(c, spec, spec.contract or _UNDESCRIBED, notifications, requests))
    document: JsonSchema = {
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "zeroclaw",
            "version": version,
            "description": "The zeroclaw daemon's JSON-RPC 2.0 surface (the standard dialect): NDJSON on the local "
            "endpoint, one message per text frame on the gateway's WebSocket /rpc.",
        },
    }
    if servers:
        document["servers"] = [dict(server) for server in servers]
    document["methods"] = methods
    # No answer ever shows a secret: a `Secret` of the config (only `config/get` answers one)
    # reads as the mask.
    schemas = {name: titled(masked(schema), name) for name, schema in sorted(c.schemas.items())}
    document["components"] = {"schemas": schemas, "errors": errors}
    document["x-extensions"] = _EXTENSIONS
    document["x-notifications"] = list(notifications.values())
    document["x-server-requests"] = list(requests.values())
    return document


# A method registered beside the daemon's own (an embedding's, a test's) is still listed; the daemon's own all
# have a contract (test_openrpc.py).
_UNDESCRIBED = Contract("(not described: its result may be any JSON)", Any)


def _method(
    c: Components,
    spec: MethodSpec[Any],
    contract: Contract,
    notifications: Mapping[str, JsonSchema],
    requests: Mapping[str, JsonSchema],
) -> JsonSchema:
    method: JsonSchema = {
        "name": spec.name,
        "summary": contract.summary,
        "paramStructure": "by-name",
        "params": _params(c, spec),
    }
    if contract.result is not None:  # a client→server notification has no result
        results = [c.of(model) for model in contract.result_models()]
        schema = results[0] if len(results) == 1 else {"anyOf": results}
        method["result"] = {"name": "result", "schema": titled(schema, pascal(spec.name) + "Result")}
    method["errors"] = [{"$ref": _ERROR_REF.format(kind=kind)} for kind in _error_kinds(spec, contract)]
    method["x-grant"] = spec.grant
    method["x-local-only"] = spec.local_only
    if contract.notifications:
        method["x-notifications"] = [notifications[name] for name in contract.notifications]
    if contract.server_requests:
        method["x-server-requests"] = [requests[name] for name in contract.server_requests]
    return method


def _params(c: Components, spec: MethodSpec[Any]) -> list[JsonSchema]:
    """One content descriptor per field of the params model, in its order (`paramStructure: by-name`)."""
    schema = c.params(spec.params)
    required = set(schema.get("required", ()))
    out = []
    for name, prop in schema.get("properties", {}).items():
        prop = titled(prop, pascal(spec.name) + "Params" + pascal(name))
        descriptor: JsonSchema = {"name": name}
        if "description" in prop:
            descriptor["description"] = prop["description"]
        descriptor["required"] = name in required
        descriptor["schema"] = prop
        out.append(descriptor)
    return out


def _error_kinds(spec: MethodSpec[Any], contract: Contract) -> list[str]:
    kinds = ["invalid_params", "internal_error"]
    if spec.requires_init:
        kinds.append("auth_required")
    if spec.grant is not None:
        kinds.append("forbidden")
    if spec.local_only:
        kinds.append("local_only")
    if contract.storage:
        kinds += ["storage_unavailable", "resources_exhausted"]
    kinds += contract.errors
    return list(dict.fromkeys(kinds))


def _error(c: Components, kind: str) -> JsonSchema:
    shape = ERROR_KINDS[kind]
    data = c.schema(shape.data)
    data["properties"]["kind"] = {"const": kind}
    return {"code": shape.error.code, "message": shape.text, "data": titled(data, pascal(kind) + "ErrorData")}


def _traffic(c: Components, name: str, traffic: Traffic) -> JsonSchema:
    params = traffic.params
    if callable(params) and not isinstance(params, type):
        models = params()  # one model per kind of message: the params are one of them
        schema: JsonSchema = {"oneOf": [c.ref(m) for m in models]}
    else:
        schema = c.of(params)
    entry: JsonSchema = {"name": name, "summary": traffic.summary, "params": titled(schema, pascal(name) + "Params")}
    if traffic.result is not None:
        entry["result"] = titled(c.of(traffic.result), pascal(name) + "Result")
    return entry
