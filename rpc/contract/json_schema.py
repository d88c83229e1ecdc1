"""The one JSON Schema generator of the daemon's documents: `/openapi.json` (gateway/openapi/) and the OpenRPC
document of `rpc.discover` (rpc/contract/openrpc.py) both describe their models through `Components`.

Every model is a msgspec Struct, so one generator (`msgspec.json.schema_components`) serves them all and a length,
a pattern or a bound is stated once, in the model. Both documents keep their schemas under
`#/components/schemas/`, where OpenAPI 3.1 and OpenRPC 1.3 alike look for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from app.config.props import MASK
from app.config.secret import Secret

__all__ = ["REF", "Components", "JsonSchema", "Model", "masked"]

REF = "#/components/schemas/{name}"
JsonSchema = dict[str, Any]
Model = type[msgspec.Struct]


def _model_schema(model: Model) -> JsonSchema:
    """`model`'s JSON schema with the schemas it references under `$defs` (referenced with `REF`): a `Secret` as
    a write-only string, and without the fields a peer cannot set (`rpc.core.registry.Params.derived_fields`)."""
    (ref,), defs = msgspec.json.schema_components((model,), schema_hook=_secret_schema, ref_template=REF)
    schema: JsonSchema = defs.pop(ref["$ref"].rsplit("/", 1)[-1])
    hidden: frozenset[str] = getattr(model, "derived_fields", frozenset())
    if hidden:
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k not in hidden}
        schema["required"] = [k for k in schema.get("required", ()) if k not in hidden]
    if defs:
        schema["$defs"] = defs
    return schema


def _secret_schema(tp: type) -> JsonSchema:
    if tp is Secret:
        return {"type": "string", "writeOnly": True}  # written, never read back: `masked` shows the mask
    raise NotImplementedError  # msgspec's "no schema for this type"


def _untitled(schema: Any) -> Any:
    """`schema` without the models' `title` annotations (a property named `title` is a key of `properties`, whose
    value is a schema, so it stays)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def _same(schema: Any) -> Any:
    return schema


def masked(schema: Any) -> Any:
    """The config as `config/get` shows it: a secret (a `writeOnly` string) reads as the mask."""
    if isinstance(schema, dict):
        if schema.get("writeOnly") is True:
            return {"const": MASK, "description": "a secret that is set; its value is never shown"}
        return {k: masked(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [masked(v) for v in schema]
    return schema


class Components:
    """`components/schemas`, filled as models are referenced; two models may not claim one name differently."""

    def __init__(self) -> None:
        self.schemas: dict[str, JsonSchema] = {}

    def _add(self, name: str, schema: JsonSchema) -> None:
        if self.schemas.setdefault(name, schema) != schema:
            raise ValueError(f"two different schemas named {name}")

    def schema(self, model: Model, shown: Callable[[Any], Any] = _same) -> JsonSchema:
        """`model`'s schema, inline; the schemas it refers to go to `components/schemas`."""
        schema: JsonSchema = shown(_untitled(_model_schema(model)))
        for name, definition in schema.pop("$defs", {}).items():
            self._add(name, definition)
        return schema

    def of(self, tp: Any) -> JsonSchema:
        """The schema of any type msgspec describes: a Struct by reference, anything else inline."""
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            return self.ref(tp)
        (schema,), defs = msgspec.json.schema_components((tp,), schema_hook=_secret_schema, ref_template=REF)
        for name, definition in defs.items():
            self._add(name, _untitled(definition))
        return _untitled(schema)  # type: ignore[no-any-return]

    def ref(self, model: Model, shown: Callable[[Any], Any] = _same) -> JsonSchema:
        """`model` in `components/schemas` (as `shown` makes it), and a reference to it."""
        self._add(model.__name__, self.schema(model, shown))
        return {"$ref": REF.format(name=model.__name__)}

    def params(self, model: Model, *, without: tuple[str, ...] | list[str] = ()) -> JsonSchema:
        """`model`'s object schema, inline, without the properties named `without` (those the path carries)."""
        schema = self.schema(model)
        drop = set(without)
        schema["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in drop}
        required = [k for k in schema.get("required", ()) if k not in drop]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        return schema
