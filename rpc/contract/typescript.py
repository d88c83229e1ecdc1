"""TypeScript declarations generated from the OpenRPC document (R-ECO-3): `web/zeroclaw.d.ts`, written by
`zeroclaw docs typescript`, which the panel's JavaScript is checked against (`tsc --checkJs`, web/tsconfig.json).

Every named schema becomes an interface (or a type), and three maps name the traffic: `ZeroclawMethods` (method →
`{params, result}`), `ZeroclawNotifications` (notification → params) and `ZeroclawServerRequests` (the daemon's
requests → `{params, result}`)."""

from __future__ import annotations

import json
import re
from typing import Any

from rpc.contract.codegen import Message, Method, messages, methods, named_schemas
from rpc.contract.names import ref_name

__all__ = ["render"]

JsonSchema = dict[str, Any]
_SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}
# A call's arguments after the method's name: its params, which may be left out when none is required.
_CALL_ARGS = [
    "/** The arguments of a call after the method's name: its params, optional when the method requires none. */",
    'export type ZeroclawCallArgs<M extends keyof ZeroclawMethods> = {} extends ZeroclawMethods[M]["params"]',
    '  ? [params?: ZeroclawMethods[M]["params"]]',
    '  : [params: ZeroclawMethods[M]["params"]];',
]
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def render(document: JsonSchema) -> str:
    out = [
        "// The zeroclaw daemon's JSON-RPC surface, generated from its OpenRPC document by",
        '// `zeroclaw docs typescript`: do not edit (docs/protocol.md, "Clients").',
    ]
    for name, schema in named_schemas(document).items():
        out += ["", *_comment(schema.get("description"), ""), *_named(name, schema)]
    calls = methods(document)
    notes, asks = messages(document, "x-notifications"), messages(document, "x-server-requests")
    for method in calls:
        result = "void" if method.result is None else type_of(method.result)
        out += ["", *_params(method), f"export type {method.type_name}Result = {result};"]
    for message in notes + asks:
        out += ["", f"export type {message.type_name}Params = {type_of(message.params)};"]
        if message.result is not None:
            out += [f"export type {message.type_name}Result = {type_of(message.result)};"]
    out += ["", "/** Every method the daemon answers: its params (by name) and its result. */"]
    out += ["export interface ZeroclawMethods {", *(_entry(m, True) for m in calls), "}"]
    out += ["", *_CALL_ARGS]
    out += ["", "/** The notifications the daemon sends: their params. */", "export interface ZeroclawNotifications {"]
    out += [f'  "{m.name}": {m.type_name}Params;' for m in notes] + ["}"]
    out += ["", "/** The requests the daemon makes: their params and the answer's result. */"]
    out += ["export interface ZeroclawServerRequests {", *(_entry(m, m.result is not None) for m in asks), "}"]
    return "\n".join(out) + "\n"


def type_of(schema: JsonSchema) -> str:
    """The TypeScript type of a JSON Schema (the subset the document uses)."""
    name = ref_name(schema)
    if name is not None:
        return name
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _union([type_of(s) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([type_of({**schema, "type": k}) for k in kind])
    if kind == "array":
        items = type_of(schema["items"]) if "items" in schema else "unknown"
        return f"Array<{items}>"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"{{ [key: string]: {type_of(extra) if isinstance(extra, dict) else 'unknown'} }}"
    return _SCALARS.get(kind, "unknown") if isinstance(kind, str) else "unknown"


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    return "unknown" if "unknown" in unique else " | ".join(unique)


def _key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else json.dumps(name)


def _comment(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    return [f"{indent}/** {text.replace('*/', '* /').replace(chr(10), ' ')} */"]


def _named(name: str, schema: JsonSchema) -> list[str]:
    properties: dict[str, JsonSchema] | None = schema.get("properties")
    if schema.get("type") != "object" or properties is None:
        return [f"export type {name} = {type_of(schema)};"]
    required = set(schema.get("required", ()))
    lines = [f"export interface {name} {{"]
    for key, prop in properties.items():
        lines += _comment(prop.get("description"), "  ")
        lines.append(f"  {_key(key)}{'' if key in required else '?'}: {type_of(prop)};")
    return [*lines, "}"]


def _params(method: Method) -> list[str]:
    lines = [f"export interface {method.type_name}Params {{"]
    for param in method.params:
        lines += _comment(param.description, "  ")
        lines.append(f"  {_key(param.name)}{'' if param.required else '?'}: {type_of(param.schema)};")
    return [*lines, "}"]


def _entry(message: Method | Message, with_result: bool) -> str:
    result = f"; result: {message.type_name}Result" if with_result else ""
    return f'  "{message.name}": {{ params: {message.type_name}Params{result} }};'
