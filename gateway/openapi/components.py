"""The OpenAPI document's components: the schemas every document shares (`rpc.json_schema.Components`, every
`$defs` hoisted into `components/schemas`), plus OpenAPI's parameters, read from a params model's properties."""

from __future__ import annotations

from collections.abc import Iterable

from rpc.contract.json_schema import Components, JsonSchema, Model

__all__ = ["OpenApiComponents"]


def _not_null(schema: JsonSchema) -> JsonSchema:
    """An optional parameter's schema without its `null` branch: absence is how a query says None."""
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k != "anyOf" and not (k == "default" and v is None)}
    if len(branches) == 1:
        return {**branches[0], **rest}
    return {**rest, "anyOf": branches} if branches else rest


class OpenApiComponents(Components):
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
