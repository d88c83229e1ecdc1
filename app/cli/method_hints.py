"""Hints about a method the person typed, from the methods' OpenRPC entries (R-DISC-1): an example of its params
(shown when the params typed are not JSON) and the name meant when it is not one the daemon serves.

The entries are the daemon's (`rpc.discover`) when the client is connected, else this version's own document
(`local_methods`, imported only on these error paths: the registry is not loaded for a call that goes well).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["did_you_mean", "local_methods", "params_example"]


def local_methods() -> list[dict[str, Any]]:
    """This version's methods as its OpenRPC document lists them (no daemon needed)."""
    from app import __version__
    from rpc.contract.openrpc import openrpc_document
    from rpc.methods import build_registry

    methods: list[dict[str, Any]] = openrpc_document(build_registry(), version=__version__)["methods"]
    return methods


def did_you_mean(method: str, names: Sequence[str]) -> str | None:
    """The served name closest to a mistyped one (`sesion/list` → `session/list`), or None."""
    if method in names:
        return None
    close = difflib.get_close_matches(method, names, n=1, cutoff=0.6)
    return close[0] if close else None


def params_example(method: str, methods: Sequence[dict[str, Any]]) -> str:
    """Params `method` takes, as JSON: its required ones, or else its first optional one, with a sample value
    each; `{}` for a method without params or unknown here."""
    entry = next((m for m in methods if m.get("name") == method), None)
    params: list[dict[str, Any]] = [p for p in (entry or {}).get("params", []) if isinstance(p, dict)]
    chosen = [p for p in params if p.get("required")] or params[:1]
    return json.dumps({p["name"]: _sample(p["name"], p.get("schema") or {}) for p in chosen}, ensure_ascii=False)


def _sample(name: str, schema: dict[str, Any]) -> Any:
    """A value `schema` accepts, one a person would recognise."""
    if "$ref" in schema:
        return {}  # an object the document names by reference: its fields to fill in
    for option in schema.get("anyOf") or ():
        if isinstance(option, dict) and option.get("type") != "null":
            return _sample(name, option)
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return not schema.get("default", False)
    if kind in ("integer", "number"):
        default = schema.get("default")
        numeric = isinstance(default, int | float) and not isinstance(default, bool)
        return default if numeric else schema.get("minimum", 1)
    if kind == "array":  # one item when it needs one (`{}` for an object it names by reference)
        return [_sample(name, schema.get("items") or {})] if schema.get("minItems") else []
    if kind == "object":
        return {}
    if isinstance(schema.get("default"), str):
        return schema["default"]
    placeholder, pattern = f"<{name}>", schema.get("pattern")
    return "s1" if pattern and not re.search(pattern, placeholder) else placeholder  # an id's pattern: a sample id
