"""The bases of the result models (answers) each method family declares beside its handlers: the result schemas of
the OpenRPC document (rpc/contract/openrpc.py) and, for the methods REST shares, of `/openapi.json`.

They describe the standard dialect's answers exactly: unknown keys are refused, so the tests that convert real
answers into them (tests/unit/rpc/test_wire_samples.py, tests/unit/gateway/test_gateway_openapi.py) fail on any
drift. A result built from a domain dataclass is derived from it (`wire_model`), as `rpc.core.wire.to_wire` puts it
on the wire, so a field added there is in the documents too.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from datetime import datetime
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from rpc.core.wire import camel

__all__ = ["TRUE", "Answer", "DateTime", "SnakeAnswer", "nested_model", "wire_model"]

DateTime = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
# Always true. A `Literal[True]` needs msgspec ≥ 0.19 (0.18 takes only None, int and str literals).
TRUE = Annotated[bool, Meta(extra_json_schema={"const": True})]


class Answer(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of the answers in camelCase."""


class SnakeAnswer(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of the answers whose keys are snake_case (`file/*`, as their params are)."""


# -- derived from the domain's dataclasses ---------------------------------------------------------


def wire_model(
    cls: type,
    *,
    name: str | None = None,
    doc: str | None = None,
    extra: tuple[tuple[str, Any], ...] = (),
    snake: bool = False,
) -> type[msgspec.Struct]:
    """The answer model of the domain dataclass `cls` as `rpc.core.wire.to_wire` puts it on the wire: its fields in
    order under their `camel` keys (their own with `snake`), then `extra` (name, type) fields; as strict as the
    models written here."""
    hints = get_type_hints(cls)
    fields = [(field.name, _wire_type(hints[field.name], snake)) for field in dataclasses.fields(cls)]
    return msgspec.defstruct(
        name or cls.__name__,
        [*fields, *extra],
        module=__name__,
        namespace={"__doc__": doc},  # never the dataclass's own: that describes the domain value
        rename=None if snake else camel,
        forbid_unknown_fields=True,
        frozen=True,
        kw_only=True,
    )


@functools.cache
def nested_model(cls: type, snake: bool = False) -> type[msgspec.Struct]:
    return wire_model(cls, snake=snake)  # one model per dataclass: one schema in `components/schemas`


def _wire_type(hint: Any, snake: bool) -> Any:
    """The type of a field's wire value, as `to_wire` converts it."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return nested_model(hint, snake)
    if hint is datetime:
        return DateTime
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, [_wire_type(arg, snake) for arg in args])
    if origin is list or (origin is tuple and args[1:] == (...,)):
        return list[_wire_type(args[0], snake)]  # type: ignore[misc]
    return hint
