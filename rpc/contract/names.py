"""Type names for the OpenRPC document and the code generated from it (R-ECO-3): one spelling of a method's or a
field's name as a type (`session/list-acp` → `SessionListAcp`), a Python identifier (`sessionId` → `session_id`),
and the `title`s that give a schema and every schema inside it a name (so a generator names no type by a hash)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["pascal", "ref_name", "snake", "titled"]

_WORDS = re.compile(r"[A-Za-z0-9]+")
_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def pascal(name: str) -> str:
    """`session/list-acp` → `SessionListAcp`, `rpc.discover` → `RpcDiscover`, `agentAlias` → `AgentAlias`."""
    return "".join(word[0].upper() + word[1:] for word in _WORDS.findall(name))


def snake(name: str) -> str:
    """`session/list-acp` → `session_list_acp`, `sessionId` → `session_id`."""
    return "_".join(_HUMPS.sub("_", word).lower() for word in _WORDS.findall(name))


def ref_name(schema: Any) -> str | None:
    """The component a `{"$ref": "#/components/schemas/Name"}` names, or None."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return None


def titled(schema: dict[str, Any], title: str) -> dict[str, Any]:
    """`schema` with `title` first, and every schema inside it titled after the path to it: a property
    `<title><Key>`, array items `<title>Item`, a map's values `<title>Value`, a branch of `anyOf`/`oneOf`
    `<title><Type>` (`<title>Enum`, or `<title>Option<n>`). A `$ref` keeps its target's name (JSON Schema draft 7
    reads nothing beside a `$ref`); a title already there stays."""
    if ref_name(schema) is not None:
        return schema
    out: dict[str, Any] = {"title": schema.get("title", title)}
    if schema.get("type") == "array" and "items" not in schema:
        schema = {**schema, "items": {}}  # any items, said: @open-rpc/generator 2.1's titleizer fails without
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            value = {name: titled(sub, title + pascal(name)) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            value = titled(value, title + "Item")
        elif key == "additionalProperties" and isinstance(value, dict):
            value = titled(value, title + "Value")
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            value = [titled(sub, title + _branch(sub, n)) for n, sub in enumerate(value, 1)]
        out[key] = value
    return out


def _branch(schema: dict[str, Any], n: int) -> str:
    kind = schema.get("type")
    if isinstance(kind, str):
        return pascal(kind)
    return "Enum" if "enum" in schema or "const" in schema else f"Option{n}"
