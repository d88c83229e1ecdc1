"""Type names for the OpenRPC document and the code generated from it (R-ECO-3): one spelling of a method's or a
field's name as a type (`session/list-acp` → `SessionListAcp`), a Python identifier (`sessionId` → `session_id`),
and the `title` that gives a schema its name."""

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
    """`schema` with `title` first; a `$ref` keeps its target's name (JSON Schema draft 7 reads nothing beside a
    `$ref`)."""
    if ref_name(schema) is not None:
        return schema
    return {"title": title, **{k: v for k, v in schema.items() if k != "title"}}
