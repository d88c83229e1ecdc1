"""The wire shape of the domain's values (R-ARCH-4): the one place camelCase keys are made.

The domain answers with dataclasses (`app.sessions.views`, `app.services.DaemonStatus`) and emits `session/update`
events as snake_case TypedDicts (`app.sessions.events`); handlers and the session bridge turn them into what the
client sees here. Only the keys the domain names are renamed: nested dicts (tool arguments, raw input) are user
data and pass through as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, get_args

from app.sessions.events import SessionEvent
from app.storage import iso_z

__all__ = ["camel", "event_to_wire", "events_to_wire", "to_wire"]


def camel(name: str) -> str:
    """`session_id` → `sessionId`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_KEYS: dict[type, tuple[tuple[str, str], ...]] = {}  # dataclass → its (field, wire key) pairs, in field order


def _keys(cls: type) -> tuple[tuple[str, str], ...]:
    keys = _KEYS.get(cls)
    if keys is None:
        keys = _KEYS[cls] = tuple((f.name, camel(f.name)) for f in dataclasses.fields(cls))
    return keys


def to_wire(value: Any) -> Any:
    """A domain value as JSON-ready data: a dataclass becomes a dict with camelCase keys (in field order), a
    datetime its `iso_z` rendering, a list or tuple a list of converted items; anything else is left as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: to_wire(getattr(value, name)) for name, key in _keys(type(value))}
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, list | tuple):
        return [to_wire(item) for item in value]
    return value


# Every key any `SessionEvent` has, with its wire spelling; a key not listed passes unchanged.
_WIRE_KEY: dict[str, str] = {
    key: camel(key) for event in get_args(SessionEvent) for key in (*event.__required_keys__, *event.__optional_keys__)
}


def events_to_wire(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`session/update` events as params: top-level keys renamed, values (and their order) as they are."""
    wire = _WIRE_KEY.get  # the streaming hot path (benchmarks/run.py, streaming row): one dict per event, no model
    return [{wire(k, k): v for k, v in event.items()} for event in events]


def event_to_wire(event: Mapping[str, Any]) -> dict[str, Any]:
    """One event's params (`events_to_wire`)."""
    return events_to_wire((event,))[0]
