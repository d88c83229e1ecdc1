"""msgspec's one-line errors as `{field, message, type}` (R-WIRE-4): the field named, the value never."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import pytest
from msgspec import Meta, field

from app.validation import field_error, locate

SECRET = "hunter2-value"


class Entry(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    n: Annotated[int, Meta(ge=3, le=9)] = 5
    f: Annotated[float, Meta(gt=0)] = 1.0
    s: Annotated[str, Meta(min_length=1, max_length=3)] = "a"
    p: Annotated[str, Meta(pattern=r"^[a-z]+$")] = "a"
    k: Literal["a", "b"] = "a"
    o: int | None = None
    items: Annotated[list[str], Meta(max_length=1)] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.n == 4:
            raise ValueError("n: four is not allowed")
        if self.n == 8:
            raise ValueError("eight is not allowed")


class Root(msgspec.Struct, forbid_unknown_fields=True):
    entry: Entry = field(default_factory=Entry)
    entries: dict[str, Entry] = field(default_factory=dict)
    nested: dict[str, dict[str, Entry]] = field(default_factory=dict)
    required: int = 0


def _error(data: Any) -> dict[str, str]:
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert(data, Root)
    return dict(locate(info.value, data, Root, msgspec.convert))


@pytest.mark.req("R-WIRE-4")
@pytest.mark.parametrize(
    ("data", "where", "kind"),
    [
        ({"entry": {"n": 1}}, "entry.n", "greater_than_equal"),
        ({"entry": {"n": 10}}, "entry.n", "less_than_equal"),
        ({"entry": {"f": 0}}, "entry.f", "greater_than"),
        ({"entry": {"n": "5"}}, "entry.n", "int_type"),
        ({"entry": {"n": True}}, "entry.n", "int_type"),
        ({"entry": {"s": 5}}, "entry.s", "string_type"),
        ({"entry": {"o": "5"}}, "entry.o", "int_type"),  # regression: an optional field's was value_error
        ({"entry": 5}, "entry", "dict_type"),
        ({"entry": {"items": "x"}}, "entry.items", "list_type"),
        ({"entry": {"s": ""}}, "entry.s", "string_too_short"),
        ({"entry": {"s": "abcd"}}, "entry.s", "string_too_long"),
        ({"entry": {"items": ["a", "b"]}}, "entry.items", "too_long"),
        ({"entry": {"items": [1]}}, "entry.items.0", "string_type"),
        ({"entry": {"p": "A"}}, "entry.p", "string_pattern_mismatch"),
        ({"entry": {"k": "c"}}, "entry.k", "literal_error"),
        ({"entry": {"typo": 1}}, "entry.typo", "extra_forbidden"),
        ({"entry": {"n": 4}}, "entry.n", "value_error"),  # a check that names its field
        ({"entry": {"n": 8}}, "entry", "value_error"),  # one that does not: the section
        (5, "", "dict_type"),
    ],
)
def test_each_kind_of_error_is_located_and_named(data: Any, where: str, kind: str) -> None:
    error = _error(data)
    assert (error["field"], error["type"]) == (where, kind), error


@pytest.mark.req("R-WIRE-4")
def test_a_missing_field_is_named() -> None:
    class Needs(msgspec.Struct):
        needed: int

    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert({}, Needs)
    assert field_error(info.value, ("params",)) == {
        "field": "params.needed",
        "message": info.value.args[0].split(" - ")[0],
        "type": "missing",
    }


@pytest.mark.req("R-WIRE-4")
def test_a_map_entry_is_named_by_its_key() -> None:
    data = {"entries": {"fine": {}, "bad": {"n": 1}}, "nested": {}}
    assert _error(data)["field"] == "entries.bad.n"
    assert _error({"nested": {"a": {"ok": {}, "b": {"n": 4}}}})["field"] == "nested.a.b.n"
    assert _error({"entries": {"bad": {"n": 8}}})["field"] == "entries.bad"
    assert _error({"entries": 5})["field"] == "entries"


@pytest.mark.req("R-WIRE-4")
def test_without_locate_a_map_key_reads_as_a_star() -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert({"entries": {"bad": {"n": 1}}}, Root)
    assert field_error(info.value)["field"] == "entries.*.n"


@pytest.mark.req("R-WIRE-4")
@pytest.mark.parametrize(
    "data", [{"entry": {"k": SECRET}}, {"entries": {"x": {"k": SECRET}}}, {"entry": {"p": SECRET.upper()}}]
)
def test_no_message_quotes_the_input(data: Any) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert(data, Root)
    assert SECRET.lower() in str(info.value).lower() or "regex" in str(info.value)  # msgspec's own text may
    error = _error(data)
    assert SECRET.lower() not in error["message"].lower(), error
