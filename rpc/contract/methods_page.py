"""`docs/methods.md` (R-DISC-2), rendered from the OpenRPC document (rpc/contract/openrpc.py): one section per method
(params, result, errors, grant, the notifications it causes), then the schemas, the errors and the daemon→client
traffic. `zeroclaw docs methods` prints it; CI fails when the committed page differs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["render"]

JsonSchema = Mapping[str, Any]

_HEADER = """\
# JSON-RPC methods

Generated from the daemon's own OpenRPC document (`rpc.discover`, `GET /openrpc.json`) by
`zeroclaw docs methods --output docs/methods.md`: do not edit by hand. The wire, the dialects and the order of
checks are in [protocol](protocol.md); this page is the standard dialect's reference.

Every method takes its params by name (an object; `[]` is no params), spelled as below; each field's other
spelling (camelCase or snake_case) is accepted too, and unknown keys are ignored. Every method can answer `-32603`
(`internal_error`) and `-32602` (`invalid_params`); one that needs `initialize` first answers `-32010` before
it, and one with a grant `-32012` without it. A method marked *local only* answers `-32012` (`local_only`) over
the gateway's WebSocket. Error `data` always holds `kind`; the [errors](#errors) table gives what each kind adds.
"""


def render(document: JsonSchema) -> str:
    out = [_HEADER, "## Methods\n"]
    out += [f"* [`{m['name']}`](#{_anchor(m['name'])}) — {m.get('summary', '')}" for m in document["methods"]]
    out.append("")
    for method in document["methods"]:
        out += _method(method)
    out += _schemas(document["components"]["schemas"])
    out += _errors(document["components"]["errors"])
    out += _traffic("Notifications (daemon → client)", document.get("x-notifications", ()))
    out += _traffic("Requests (daemon → client)", document.get("x-server-requests", ()))
    return "\n".join(out).rstrip() + "\n"


def _anchor(text: str) -> str:
    """GitHub's heading anchor of `` `text` ``: lower case, punctuation but `-` and `_` dropped."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def _method(method: JsonSchema) -> list[str]:
    grant = method.get("x-grant")
    facts = [f"grant `{grant}`" if grant else "no grant; answered before `initialize`"]
    if method.get("x-local-only"):
        facts.append("local only")
    out = [f"### `{method['name']}`\n", f"{method.get('summary', '')}.\n", f"*{'; '.join(facts)}*\n"]
    params = method.get("params", [])
    if params:
        out += ["| param | type | required | |", "|---|---|---|---|"]
        for p in params:
            schema = p["schema"]
            note = _default(schema)
            out.append(f"| `{p['name']}` | {_type(schema)} | {'yes' if p.get('required') else 'no'} | {note} |")
        out.append("")
    else:
        out.append("No params.\n")
    if "result" in method:
        out.append(f"**Result**: {_type(method['result']['schema'])}\n")
    else:
        out.append("**A notification**: no answer.\n")
    codes = [_ref_name(e["$ref"]) for e in method.get("errors", [])]
    out.append("**Errors**: " + ", ".join(f"[`{k}`](#{_anchor(k)})" for k in codes) + "\n")
    for key, label in (("x-notifications", "Notifications"), ("x-server-requests", "Asks the client")):
        names = [t["name"] for t in method.get(key, ())]
        if names:
            out.append(f"**{label}**: " + ", ".join(f"`{n}`" for n in names) + "\n")
    return out


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _default(schema: JsonSchema) -> str:
    return f"default `{json.dumps(schema['default'])}`" if "default" in schema else ""


def _type(schema: JsonSchema) -> str:
    """A schema in a few words: a type, its bounds, or a link to a named schema."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[{name}](#schema-{_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(branch) for branch in schema[key])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        text = f"array of {_type(schema.get('items', {}))}"
    elif kind == "object" and "additionalProperties" in schema and schema["additionalProperties"] not in (True, False):
        text = f"map of {_type(schema['additionalProperties'])}"
    else:
        text = kind or "any JSON"
    return text + _bounds(schema)


def _bounds(schema: JsonSchema) -> str:
    bounds = []
    for key, label in (
        ("minLength", "≥ {} chars"),
        ("maxLength", "≤ {} chars"),
        ("minimum", "≥ {}"),
        ("maximum", "≤ {}"),
        ("minItems", "≥ {} items"),
        ("maxItems", "≤ {} items"),
    ):
        if key in schema:
            bounds.append(label.format(schema[key]))
    if "pattern" in schema:
        bounds.append(f"matching `{schema['pattern']}`")
    if "format" in schema:
        bounds.append(schema["format"])
    return f" ({', '.join(bounds)})" if bounds else ""


def _schemas(schemas: Mapping[str, JsonSchema]) -> list[str]:
    out = ["## Schemas\n"]
    for name, schema in schemas.items():
        out.append(f'### <a id="schema-{_anchor(name)}"></a>{name}\n')
        if schema.get("description"):
            out.append(f"{schema['description']}\n")
        properties = schema.get("properties")
        if properties is None:
            out.append(f"{_type(schema)}\n")
            continue
        required = set(schema.get("required", ()))
        out += ["| key | type | always |", "|---|---|---|"]
        out += [f"| `{k}` | {_type(v)} | {'yes' if k in required else 'no'} |" for k, v in properties.items()]
        out.append("")
    return out


def _errors(errors: Mapping[str, JsonSchema]) -> list[str]:
    out = ["## Errors\n", "| kind | code | message | `data` adds |", "|---|---|---|---|"]
    for kind, error in errors.items():
        props = {k: v for k, v in error["data"].get("properties", {}).items() if k != "kind"}
        adds = ", ".join(f"`{k}` {_type(v)}" for k, v in props.items()) or "—"
        out.append(f'| <a id="{_anchor(kind)}"></a>`{kind}` | {error["code"]} | {error["message"]} | {adds} |')
    out.append("")
    return out


def _traffic(title: str, entries: Iterable[JsonSchema]) -> list[str]:
    entries = list(entries)
    if not entries:
        return []
    out = [f"## {title}\n"]
    for entry in entries:
        out.append(f"### `{entry['name']}`\n")
        out.append(f"{entry.get('summary', '')}.\n")
        out.append(f"**Params**: {_type(entry['params'])}\n")
        if "result" in entry:
            out.append(f"**Answer**: {_type(entry['result'])}\n")
    return out
