"""Property tests: whatever valid int or str is set comes back from get, also after a trip through the file."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.config import props, toml_file
from app.config.schema import Config, fields_of, is_section
from app.config.store import ConfigStore


def _int_fields() -> list[tuple[str, int, int]]:
    """Every int field of the fixed sections plus a few in map entries, with their bounds."""
    out: list[tuple[str, int, int]] = []
    for section, field in fields_of(Config).items():
        model = field.annotation
        if not is_section(model):
            continue
        for name, sub in fields_of(model).items():
            if sub.annotation is not int:
                continue
            lo, hi = -(2**63), 2**63 - 1
            for meta in sub.meta:
                lo = int(meta.ge) if meta.ge is not None else lo
                hi = int(meta.le) if meta.le is not None else hi
            out.append((f"{section}.{name}", lo, hi))
    out += [("agents.default.max_turn_steps", 1, 2**63 - 1), ("users.someone.uid", 0, 2**63 - 1)]
    return out


INT_FIELDS = _int_fields()
STR_FIELDS = [
    "gateway.host",
    "storage.url",
    "agents.default.model",
    "agents.default.system_prompt",
    "agents.helper.workspace_dir",
    "providers.local.base_url",
    "providers.local.model",
]

ints = st.sampled_from(INT_FIELDS).flatmap(lambda f: st.tuples(st.just(f[0]), st.integers(f[1], f[2])))
strs = st.tuples(st.sampled_from(STR_FIELDS), st.text(max_size=200))


def _through_file(prop: str, value: object, base: str = "# keep me\n") -> Config:
    doc = toml_file.parse(base.encode(), Path("config.toml"))
    props.apply_set(doc, prop, value)
    text = doc.as_string()
    assert text.startswith("# keep me\n")
    config, _ = toml_file.validate(toml_file.parse(text.encode(), Path("config.toml")))
    return config


def test_the_int_field_list_is_not_empty() -> None:
    assert len(INT_FIELDS) > 10 and ("limits.max_connections", 1, 2**63 - 1) in INT_FIELDS


@given(ints)
def test_int_set_get_round_trip(entry: tuple[str, int]) -> None:
    # R-CFG-1, R-CFG-5
    prop, value = entry
    assert props.get(_through_file(prop, value), prop) == value


@given(strs)
def test_str_set_get_round_trip(entry: tuple[str, str]) -> None:
    # R-CFG-1, R-CFG-5: any text, control characters and non-ASCII included
    prop, value = entry
    assert props.get(_through_file(prop, value), prop) == value


def _allow(props_: Sequence[str]) -> None:
    return None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(ints, strs), min_size=1, max_size=8))
def test_store_set_many_round_trip(entries: list[tuple[str, object]]) -> None:
    # R-CFG-2: later entries win; a fresh store reading the file agrees with the live config
    with tempfile.TemporaryDirectory() as tmp:
        store = ConfigStore(Path(tmp))
        sets = [{"prop": p, "value": v} for p, v in entries]
        result = asyncio.run(store.set_many(sets, authorize=_allow))
        assert result == list(dict.fromkeys(p for p, _ in entries))
        final = dict(entries)
        for prop, value in final.items():
            assert store.get(prop) == value
        assert ConfigStore(Path(tmp)).current == store.current
