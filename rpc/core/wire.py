"""The wire shape of the domain's values (R-ARCH-4): the one place camelCase keys are made.

The domain answers with dataclasses (`app.sessions.views`, `app.services.DaemonStatus`) and emits `session/update`
events as snake_case TypedDicts (`app.sessions.events`); handlers and the session bridge turn them into what the
client sees here. Only the keys the domain names are renamed: nested dicts (tool arguments, raw input) are user
data and pass through as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from app.sessions.events import SessionEvent
from app.storage import iso_z

__all__ = ["camel", "events_to_wire", "not_standard", "to_wire"]


def camel(name: str) -> str:
    """`session_id` → `sessionId`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _compile(cls: type, snake: bool) -> Callable[[Any], dict[str, Any]]:
    """The converter of one dataclass: a dict literal over its fields, made once per class and spelling, as
    `dataclasses` makes `__init__` (a literal is about 4x faster than building the dict in a loop, and
    `session/list` converts a few dozen of these per call: benchmarks/run.py)."""
    hints = get_type_hints(cls)
    items = []
    for field in dataclasses.fields(cls):
        key = field.name if snake else camel(field.name)
        hint = hints.get(field.name, Any)
        read = f"value.{field.name}"
        if hint in _DATETIMES:
            read = f"_iso({read})"
        elif not _as_is(hint):
            read = f"_to_wire({read}, snake={snake})"
        items.append(f"{key!r}: {read}")
    source = f"def convert(value):\n    return {{{', '.join(items)}}}\n"
    namespace: dict[str, Any] = {"_iso": _iso_or_none, "_to_wire": to_wire}
    exec(compile(source, f"<wire shape of {cls.__qualname__}>", "exec"), namespace)  # noqa: S102  # our own fields
    converter: Callable[[Any], dict[str, Any]] = namespace["convert"]
    return converter


def _iso_or_none(value: datetime | None) -> str | None:
    return None if value is None else iso_z(value)


def _as_is(hint: Any) -> bool:
    """A field of this type goes on the wire as it is: a scalar, a literal, a dict (user data), or a union of them."""
    origin = get_origin(hint)
    if origin is Literal:
        return True
    if origin in (Union, UnionType):
        return all(_as_is(arg) for arg in get_args(hint))
    return hint in (str, int, bool, float, type(None)) or origin is dict or hint is dict


_DATETIMES = {datetime, datetime | None}
_CONVERTERS: dict[tuple[type, bool], Callable[[Any], dict[str, Any]]] = {}


def to_wire(value: Any, *, snake: bool = False) -> Any:
    """A domain value as JSON-ready data: a dataclass becomes a dict with camelCase keys (in field order; its own
    snake_case names with `snake`, for a dialect that spells them so), a datetime its `iso_z` rendering, a list or
    tuple a list of converted items; anything else (a dict included: user data) is left as it is."""
    convert = _CONVERTERS.get((type(value), snake))
    if convert is not None:
        return convert(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        convert = _CONVERTERS[type(value), snake] = _compile(type(value), snake)
        return convert(value)
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, list | tuple):
        return [to_wire(item, snake=snake) for item in value]
    return value


# Every key any `SessionEvent` has, with its wire spelling; a key not listed passes unchanged.
_WIRE_KEY: dict[str, str] = {
    key: camel(key) for event in get_args(SessionEvent) for key in (*event.__required_keys__, *event.__optional_keys__)
}


# Fields the domain gives for other dialects (`history_trimmed.kept_turns`, `.reason`; ACP's `usage_update` from
# `usage.context_tokens`, `.session_cost_usd`), which the standard wire of SPEC §3 does not carry.
_NOT_STANDARD: dict[str, frozenset[str]] = {
    "history_trimmed": frozenset({"kept_turns", "reason"}),
    "usage": frozenset({"context_tokens", "session_cost_usd"}),
}


def not_standard(event_type: str) -> frozenset[str]:
    """The domain's fields of an event type that the standard wire leaves out."""
    return _NOT_STANDARD.get(event_type, frozenset())


def events_to_wire(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`session/update` events as params: top-level keys renamed, values (and their order) as they are."""
    wire = _WIRE_KEY.get
    out = []
    for event in events:
        omit = _NOT_STANDARD.get(event["type"])
        shown = {wire(k, k): v for k, v in event.items() if omit is None or k not in omit}
        usage = shown.get("usage") if event["type"] == "turn_complete" else None
        if usage is not None:  # the one nested value that is ours, not user data (R-MODEL-5)
            shown["usage"] = {wire(k, k): v for k, v in usage.items()}
        out.append(shown)
    return out
