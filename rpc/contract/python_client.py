"""The typed async Python client generated from the OpenRPC document (R-ECO-3):
`clients/python/zeroclaw_client/_generated.py`, written by `zeroclaw docs python-client`.

Every named schema becomes a `TypedDict` (no dependency: the package needs nothing but the standard library),
every method an `async` method with keyword params (`session/prompt` → `session_prompt(session_id=…)`), every
notification an `on_<name>(handler)` and every daemon request an `on_<name>(handler)` whose answer is typed. The
transport (`zeroclaw_client._transport.Connection`) is hand-written and generic; nothing here knows sockets."""

from __future__ import annotations

import json
import keyword
from typing import Any

from rpc.contract.codegen import Message, Method, messages, methods, named_schemas
from rpc.contract.names import ref_name, snake

__all__ = ["render"]

JsonSchema = dict[str, Any]
_CLIENT_DOC = "One method per RPC method; `on_…` registers a handler for what the daemon sends."
_SCALARS = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
    "array": "list[Any]",
}


def render(document: JsonSchema) -> str:
    out = [
        '"""The zeroclaw client\'s types and methods, generated from the OpenRPC document by',
        '`zeroclaw docs python-client`: do not edit (docs/protocol.md, "Clients")."""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Awaitable, Callable",
        "from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast",
        "",
        "from ._transport import Connection",
    ]
    types: list[str] = []
    names: list[str] = ["ZeroclawClient"]

    def alias(name: str, target: str) -> None:
        types.append(f"{name}: TypeAlias = {target}")
        names.append(name)

    for name, schema in named_schemas(document).items():
        types += ["", "", *_named(name, schema)]
        names.append(name)
    calls = methods(document)
    notes, asks = messages(document, "x-notifications"), messages(document, "x-server-requests")
    for method in calls:
        types.append("")
        alias(f"{method.type_name}Result", "None" if method.result is None else _quoted(method.result))
        for param in method.params:
            if _choice(param.schema):
                alias(param.schema["title"], _quoted(param.schema))
    for message in notes + asks:
        types.append("")
        alias(f"{message.type_name}Params", _quoted(message.params))
        if message.result is not None:
            alias(f"{message.type_name}Result", _quoted(message.result))
    out += ["", "__all__ = [", *(f'    "{name}",' for name in sorted(names)), "]", *types]
    out += ["", "", "class ZeroclawClient(Connection):", f"    {_docstring(_CLIENT_DOC, 4)}"]
    for method in calls:
        out += ["", *_method(method)]
    for message in notes:
        out += ["", *_on_notification(message)]
    for message in asks:
        out += ["", *_on_request(message)]
    return "\n".join(out) + "\n"


def type_of(schema: JsonSchema) -> str:
    """The Python type of a JSON Schema (the subset the document uses)."""
    name = ref_name(schema)
    if name is not None:
        return name
    if "const" in schema:
        return f"Literal[{_literal(schema['const'])}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(_literal(v) for v in schema["enum"]) + "]"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _union([type_of(s) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([type_of({**schema, "type": k}) for k in kind])
    if kind == "array" and "items" in schema:
        return f"list[{type_of(schema['items'])}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"dict[str, {type_of(extra) if isinstance(extra, dict) else 'Any'}]"
    return _SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _choice(schema: JsonSchema) -> bool:
    """A param that is one of a few values gets its name (`SessionApproveDecision`), for a handler to return."""
    return "title" in schema and ("enum" in schema or "const" in schema)


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "Any" in unique:
        return "Any"
    return " | ".join([t for t in unique if t != "None"] + (["None"] if "None" in unique else []))


def _literal(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _quoted(schema: JsonSchema) -> str:
    return _string(type_of(schema))


def _string(text: str) -> str:
    """A type as a string: a forward reference (the names are defined in the document's order)."""
    return f"'{text}'" if '"' in text else f'"{text}"'


def _named(name: str, schema: JsonSchema) -> list[str]:
    properties: dict[str, JsonSchema] | None = schema.get("properties")
    if schema.get("type") != "object" or properties is None:
        return [f"{name}: TypeAlias = {_quoted(schema)}"]
    required = set(schema.get("required", ()))

    def field(key: str, prop: JsonSchema) -> str:
        return type_of(prop) if key in required else f"NotRequired[{type_of(prop)}]"

    if all(key.isidentifier() and not keyword.iskeyword(key) for key in properties):
        lines = [f"class {name}(TypedDict):"]
        if "description" in schema:
            lines.append(f"    {_docstring(schema['description'], 4)}")
        lines += [f"    {key}: {field(key, prop)}" for key, prop in properties.items()] or ["    pass"]
        return lines
    items = [f"    {json.dumps(key)}: {_string(field(key, prop))}," for key, prop in properties.items()]
    return [f'{name} = TypedDict("{name}", {{', *items, "})"]


def _docstring(text: str, indent: int) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return '"""' + text.replace("\n", "\n" + " " * indent) + '"""'


def _argument(name: str) -> str:
    arg = snake(name)
    return arg + "_" if keyword.iskeyword(arg) or arg == "self" else arg


def _method(method: Method) -> list[str]:
    args = []
    for param in method.params:
        kind = type_of(param.schema)
        if param.required:
            args.append(f"{_argument(param.name)}: {kind}")
        else:
            nullable = kind if kind.endswith("None") or kind == "Any" else kind + " | None"
            args.append(f"{_argument(param.name)}: {nullable} = None")
    signature = f"    async def {snake(method.name)}(self"
    signature += (", *, " + ", ".join(args) if args else "") + f") -> {method.type_name}Result:"
    required = ", ".join(f'"{p.name}": {_argument(p.name)}' for p in method.params if p.required)
    optional = ", ".join(f'"{p.name}": {_argument(p.name)}' for p in method.params if not p.required)
    if method.result is None:  # a notification: sent, never answered
        send = f'        await self._notify("{method.name}", {{{required}}}, {{{optional}}})'
    else:
        call = f'await self._call("{method.name}", {{{required}}}, {{{optional}}})'
        send = f'        return cast("{method.type_name}Result", {call})'
    return [signature, f"        {_docstring(method.summary, 8)}", send]


def _on_notification(message: Message) -> list[str]:
    return [
        f"    def on_{snake(message.name)}(",
        f'        self, handler: Callable[["{message.type_name}Params"], Awaitable[None] | None]',
        "    ) -> None:",
        f"        {_docstring(message.summary + ' (handlers run in arrival order; a coroutine as its own task)', 8)}",
        f'        self._on_notification("{message.name}", handler)',
    ]


def _on_request(message: Message) -> list[str]:
    return [
        f"    def on_{snake(message.name)}(",
        f'        self, handler: Callable[["{message.type_name}Params"], Awaitable["{message.type_name}Result"]]',
        "    ) -> None:",
        f"        {_docstring(message.summary + ' (one handler; without one the daemon is told -32601)', 8)}",
        f'        self._on_request("{message.name}", handler)',
    ]
