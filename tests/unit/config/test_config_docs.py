"""docs/config.md lists every key with its real default, so the page cannot drift from the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.config.schema import Agent, Config, PermissionProfile, Provider, Section, User, fields_of, is_section

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"
HEADING = re.compile(r"^### `\[([a-z_]+(?:\.[a-z_]+)?)(?:\.<\w+>)?\]`$")
ROW = re.compile(r"^\| `(\w+)` \| [^|]+ \| (`[^`]*`|unset) \|")
ENTRY_MODELS: dict[str, type[Section]] = {
    "agents": Agent,
    "providers": Provider,
    "permission_profiles": PermissionProfile,
    "users": User,
}


def _documented() -> dict[str, dict[str, str]]:
    tables: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text().splitlines():
        if heading := HEADING.match(line):
            current = tables.setdefault(heading.group(1), {})
        elif current is not None and (row := ROW.match(line)):
            current[row.group(1)] = row.group(2)
    return tables


def _render(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)):
        return f"`{value!r}`"
    return f"`{json.dumps(value)}`"


def _model(section: str) -> type[Section]:
    top, _, nested = section.partition(".")  # `tools.bash`: a section inside a section (R-GUARD-4)
    if top in ENTRY_MODELS:
        model: type[Section] = ENTRY_MODELS[top]
    else:
        annotation = fields_of(Config)[top].annotation
        assert is_section(annotation)
        model = annotation
    if nested:
        inner = fields_of(model)[nested].annotation
        assert is_section(inner)
        return inner
    return model


def test_every_section_and_key_is_documented_with_its_default() -> None:
    documented = _documented()
    assert {s for s in documented if "." not in s} == set(fields_of(Config))
    for section, rows in documented.items():
        model = _model(section)
        # A field that is itself a section has its own heading (`[tools.bash]`) or is described in words.
        nested = {name for name, field in fields_of(model).items() if is_section(field.annotation)}
        assert set(rows) - nested == set(fields_of(model)) - nested, section
        for name, field in fields_of(model).items():
            if name in nested:
                continue
            default = field.default_value()
            assert rows[name] == _render(default), f"{section}.{name}"
