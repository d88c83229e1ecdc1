"""docs/config.md lists every key with its real default, so the page cannot drift from the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.config.schema import (
    Agent,
    Config,
    McpServer,
    PermissionProfile,
    Provider,
    Section,
    User,
    fields_of,
    is_section,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"
# `[limits]`, `[providers.<alias>]`, and a section inside a map entry: `[providers.<alias>.pricing]`.
HEADING = re.compile(r"^### `\[([a-z_]+)(?:\.<\w+>)?((?:\.[a-z_]+)?)\]`$")
ROW = re.compile(r"^\| `(\w+)` \| [^|]+ \| (`[^`]*`|unset|a table below) \|")
ENTRY_MODELS: dict[str, type[Section]] = {
    "agents": Agent,
    "providers": Provider,
    "permission_profiles": PermissionProfile,
    "users": User,
}
# A map inside a section: `[mcp.servers.<name>]` (R-MCP-1).
NESTED_ENTRIES: dict[str, type[Section]] = {"mcp.servers": McpServer}


def _documented() -> dict[str, dict[str, str]]:
    tables: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text().splitlines():
        nested = next((n for n in NESTED_ENTRIES if line == f"### `[{n}.<name>]`"), None)
        if nested is not None:
            current = tables.setdefault(nested, {})
        elif heading := HEADING.match(line):
            current = tables.setdefault(heading.group(1) + heading.group(2), {})
        elif current is not None and (row := ROW.match(line)):
            current[row.group(1)] = row.group(2)
    return tables


def _render(value: Any) -> str:
    if isinstance(value, Section):
        return "a table below"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)):
        return f"`{value!r}`"
    return f"`{json.dumps(value)}`"


def _model(section: str) -> type[Section]:
    if section in NESTED_ENTRIES:
        return NESTED_ENTRIES[section]
    if "." in section:  # a section inside a map entry or a section: `[providers.<alias>.pricing]`, `[tools.bash]`
        entry, _, name = section.partition(".")
        outer = ENTRY_MODELS.get(entry) or fields_of(Config)[entry].annotation
        annotation = fields_of(outer)[name].annotation
        assert is_section(annotation)
        return annotation
    if section in ENTRY_MODELS:
        return ENTRY_MODELS[section]
    annotation = fields_of(Config)[section].annotation
    assert is_section(annotation)
    return annotation


def test_every_section_and_key_is_documented_with_its_default() -> None:
    documented = _documented()
    assert {name for name in documented if "." not in name} == set(fields_of(Config))
    for section, rows in documented.items():
        model = _model(section)
        assert set(rows) == set(fields_of(model)), section
        for name, field in fields_of(model).items():
            default = field.default_value()
            assert rows[name] == _render(default), f"{section}.{name}"
