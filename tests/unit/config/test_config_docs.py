"""docs/config.md lists every key with its real default, so the page cannot drift from the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from app.config.schema import Agent, Config, PermissionProfile, Provider, User

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"
HEADING = re.compile(r"^### `\[([a-z_]+)(?:\.<\w+>)?\]`$")
ROW = re.compile(r"^\| `(\w+)` \| [^|]+ \| (`[^`]*`|unset) \|")
ENTRY_MODELS: dict[str, type[BaseModel]] = {
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


def _model(section: str) -> type[BaseModel]:
    if section in ENTRY_MODELS:
        return ENTRY_MODELS[section]
    annotation = Config.model_fields[section].annotation
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation


def test_every_section_and_key_is_documented_with_its_default() -> None:
    documented = _documented()
    assert set(documented) == set(Config.model_fields)
    for section, rows in documented.items():
        model = _model(section)
        assert set(rows) == set(model.model_fields), section
        for name, field in model.model_fields.items():
            default = field.get_default(call_default_factory=True)
            assert rows[name] == _render(default), f"{section}.{name}"
