"""msgspec's validation errors as `{field, message, type}` (R-WIRE-4): the shape every invalid-params answer and
config error carries, naming the field and never the value.

msgspec stops at the first error and says it as one line, `<message> - at `$.a.b[0]``. This module reads that line
into the field path (dots, `a.b.0`), a stable snake_case `type` (the names pydantic used before, so clients see the
same ones) and a message that names no value: msgspec's own enum message quotes the input, so it is replaced.
A map key is shown by msgspec as `[...]`; `locate` finds which key it was by validating the entries one by one.
A check in a Struct's `__post_init__` is located at the Struct; one whose message starts `"<field>: "` names the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict, get_args, get_origin, get_type_hints

import msgspec

__all__ = ["FieldError", "field_error", "locate"]


class FieldError(TypedDict):
    field: str
    message: str
    type: str


_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_NAMED = re.compile(r"^Object (missing required|contains unknown) field `([^`]+)`$")
_FIELD_PREFIX = re.compile(r"^([a-z_]+): (.+)$", re.DOTALL)  # a `__post_init__` check naming its field
_TYPE = re.compile(r"^Expected `(\w+)(?: \| null)?`, got `(\w+)`$")  # `int | null`: an optional int
_BOUND = re.compile(r"^Expected `(\w+)`( of length)? (>=|>|<=|<) \S+$")

# msgspec's type names → pydantic's error type prefixes (`int_type`, `string_type`, ...).
_KIND = {"str": "string", "object": "dict", "array": "list", "null": "none", "number": "float"}
_BOUND_TYPE = {">=": "greater_than_equal", ">": "greater_than", "<=": "less_than_equal", "<": "less_than"}
_LENGTH_TYPE = {">=": "too_short", ">": "too_short", "<=": "too_long", "<": "too_long"}


_ANY_KEY = None  # msgspec's `[...]`: some key of a map


def _path(text: str | None) -> list[str | None]:
    return [name or (_ANY_KEY if index == "..." else index) for name, index in _SEGMENT.findall(text or "")]


def _parse(exc: msgspec.ValidationError) -> tuple[list[str | None], str, str]:
    """(path, message, type) of the error `exc` states."""
    match = _AT.match(str(exc))
    assert match is not None  # the pattern matches any text
    message, path = match["message"], _path(match["path"])
    kind = "value_error"
    if named := _NAMED.match(message):
        path.append(named[2])
        kind = "missing" if named[1] == "missing required" else "extra_forbidden"
    elif typed := _TYPE.match(message):
        kind = f"{_KIND.get(typed[1], typed[1])}_type"
    elif bound := _BOUND.match(message):
        if not bound[2]:
            kind = _BOUND_TYPE[bound[3]]
        elif bound[1] == "str":
            kind = f"string_{_LENGTH_TYPE[bound[3]]}"
        else:
            kind = _LENGTH_TYPE[bound[3]]
    elif message.startswith("Expected `str` matching regex"):
        kind, message = "string_pattern_mismatch", "String does not match the expected pattern"
    elif message.startswith("Invalid enum value"):
        kind, message = "literal_error", "Input is not one of the allowed values"  # msgspec's own quotes the input
    elif prefixed := _FIELD_PREFIX.match(message):
        path.append(prefixed[1])
        message = prefixed[2]
    return path, message, kind


def field_error(exc: msgspec.ValidationError, prefix: tuple[str, ...] = ()) -> FieldError:
    """The error `exc` states, its field located below `prefix` (a map key it does not name reads `*`: see
    `locate`)."""
    path, message, kind = _parse(exc)
    return FieldError(field=".".join([*prefix, *(seg or "*" for seg in path)]), message=message, type=kind)


def locate(exc: msgspec.ValidationError, data: Any, tp: Any, convert: Any) -> FieldError:
    """`field_error(exc)` with each map key msgspec does not name found: the map's entries are validated one by one
    (`convert(entry, entry_type)`), in order, and the first that fails names the key."""
    path, message, kind = _parse(exc)
    done: list[str] = []
    node, node_type = data, tp
    for seg in path:
        if seg is not _ANY_KEY:
            done.append(seg)
            node, node_type = _below(node, node_type, seg)
            continue
        entry_type = get_args(node_type)[1] if get_origin(node_type) is dict else Any
        for key, entry in node.items() if isinstance(node, Mapping) else ():
            try:
                convert(entry, entry_type)
            except msgspec.ValidationError as inner:
                found = locate(inner, entry, entry_type, convert)
                field = ".".join(filter(None, [*done, key, found["field"]]))
                return FieldError(field=field, message=found["message"], type=found["type"])
        break  # no entry fails alone: the error is about the map as a whole
    return FieldError(field=".".join(done), message=message, type=kind)


def _below(node: Any, tp: Any, seg: str) -> tuple[Any, Any]:
    child = node.get(seg) if isinstance(node, Mapping) else None
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return child, get_type_hints(tp, include_extras=False).get(seg, Any)
    if get_origin(tp) is dict:
        return child, get_args(tp)[1]
    return child, Any
