"""What the client generators (`rpc.contract.python_client`, `rpc.contract.typescript`) read from the OpenRPC
document: the named schemas, the methods with their params and result, the daemon→client notifications and
requests, and the type name each gets (`SessionPromptParams`, `SessionPromptResult`, `SessionUpdateParams`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rpc.contract.names import pascal

__all__ = ["Message", "Method", "Param", "messages", "methods", "named_schemas"]

JsonSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Param:
    name: str  # as the wire spells it (camelCase)
    schema: JsonSchema
    required: bool
    description: str | None


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    summary: str
    params: list[Param]
    result: JsonSchema | None  # None: a notification (no answer)

    @property
    def type_name(self) -> str:
        return pascal(self.name)


@dataclass(frozen=True, slots=True)
class Message:
    """A notification (no `result`) or a request the daemon sends."""

    name: str
    summary: str
    params: JsonSchema
    result: JsonSchema | None

    @property
    def type_name(self) -> str:
        return pascal(self.name)


def named_schemas(document: JsonSchema) -> dict[str, JsonSchema]:
    """`components/schemas`, by name."""
    return dict(document["components"]["schemas"])


def methods(document: JsonSchema) -> list[Method]:
    out = []
    for method in document["methods"]:
        params = [Param(p["name"], p["schema"], p["required"], p.get("description")) for p in method["params"]]
        result = method["result"]["schema"] if "result" in method else None
        out.append(Method(method["name"], method["summary"], params, result))
    return out


def messages(document: JsonSchema, key: str) -> list[Message]:
    """`x-notifications` or `x-server-requests`."""
    return [Message(m["name"], m.get("summary", ""), m["params"], m.get("result")) for m in document[key]]
