"""docs/limits.md lists every limit (R-LIM): each `[limits]` key with its real default, the other sections' keys it
names with theirs, and each protocol constant with the value the code uses."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from app.config.schema import Agent, Config, Limits, Provider, Section, fields_of, is_section

DOC = Path(__file__).resolve().parents[3] / "docs" / "limits.md"
SECTION = re.compile(r"^## (.+)$")
CELLS = re.compile(r"^\|(.+)\|$")
ENTRY_MODELS: dict[str, type[Section]] = {"agents": Agent, "providers": Provider}


def _tables() -> dict[str, list[list[str]]]:
    """The rows (cells stripped) of each `## ` section's table, header and rule left out."""
    tables: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in DOC.read_text().splitlines():
        if heading := SECTION.match(line):
            current = tables.setdefault(heading.group(1), [])
        elif current is not None and (row := CELLS.match(line)):
            cells = [c.strip() for c in row.group(1).split("|")]
            if not set(cells[0]) <= set("-") and cells[0] not in ("key", "limit"):
                current.append(cells)
    return tables


def _render(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _default(model: type[Section], name: str) -> object:
    return fields_of(model)[name].default_value()


@pytest.mark.req("R-LIM")
def test_every_limits_key_is_documented_with_its_default() -> None:
    rows = _tables()["`[limits]`"]
    documented = {cells[0].strip("`"): cells[1] for cells in rows}
    assert set(documented) == set(fields_of(Limits))
    for name in fields_of(Limits):
        assert documented[name] == _render(_default(Limits, name)), name
    assert all(cells[2] for cells in rows), "every limit says what happens past it"


@pytest.mark.req("R-LIM")
def test_keys_of_other_sections_carry_their_real_defaults() -> None:
    rows = _tables()["Other sections"]
    assert rows
    for cells in rows:
        m = re.fullmatch(r"`\[(\w+)(?:\.<\w+>)?\] (\w+)`", cells[0])
        assert m is not None, cells[0]
        section, name = m.groups()
        model = ENTRY_MODELS.get(section)
        if model is None:
            annotation = fields_of(Config)[section].annotation
            assert is_section(annotation)
            model = annotation
        assert cells[1] == _render(_default(model, name)), cells[0]


@pytest.mark.req("R-LIM")
def test_protocol_constants_show_the_values_the_code_uses() -> None:
    rows = _tables()["Protocol constants (not configurable)"]
    checked = 0
    for limit, value, _past, where in rows:
        m = re.fullmatch(r"`([\w/]+)\.py` `([A-Z_]+)`", where)
        if m is None:
            continue
        constant = getattr(importlib.import_module(m.group(1).replace("/", ".")), m.group(2))
        assert f"{constant:,}" in value or re.search(rf"\b{constant}\b", value), (limit, constant)
        checked += 1
    assert checked >= 9
