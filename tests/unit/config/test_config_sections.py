"""The config schema described for a settings screen (`app.config.sections`, R-ZC-4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import schema as config_schema
from app.config import sections as cs
from app.config.errors import UnknownProp
from app.config.props import MASK
from app.config.schema import Config, Pricing, fields_of
from app.config.schema import Provider as ProviderConfig
from app.config.store import ConfigStore

pytestmark = pytest.mark.req("R-ZC-4")

KINDS = {"string", "bool", "integer", "float", "enum", "alias_ref", "string_array", "object_array", "object"}
WRITTEN = {
    "limits": {"max_sessions": 3},
    "providers": {"oa": {"kind": "openai", "api_key": "sk-very-secret"}},
    "agents": {"coder": {"provider": "oa", "tools": ["bash"]}},
    "permission_profiles": {"op": {"grants": {"config": ["read"]}}},
}


def _config() -> Config:
    return config_schema.convert(WRITTEN)


def _entries(prefix: str | None = None) -> dict[str, cs.ConfigFieldEntry]:
    return {e.path: e for e in cs.field_entries(_config(), WRITTEN, prefix)}


def test_one_section_per_top_level_key_in_zerocode_groups() -> None:
    found = cs.sections(_config(), WRITTEN)
    assert [s.key for s in found] == sorted(fields_of(Config))
    assert all(s.group in cs.GROUPS for s in found)
    by_key = {s.key: s for s in found}
    assert by_key["agents"].group == by_key["providers"].group == "Foundation"
    assert by_key["permission_profiles"].label == "Permission profiles"
    assert by_key["limits"].help.startswith("Per-connection and daemon-wide limits")  # the model's docstring
    assert all(s.help for s in found)
    assert not any(s.has_picker or s.ready or s.is_quickstart or s.cost_category for s in found)
    # completed: the section has a key written in config.toml
    assert {s.key for s in found if s.completed} == {"limits", "providers", "agents", "permission_profiles"}
    # zerocode's first section after its group sort is a real prefix with entries
    first = sorted(found, key=lambda s: cs.GROUPS.index(s.group))[0]
    assert first.key == "agents" and cs.field_entries(_config(), WRITTEN, first.key)


def test_leaves_of_a_map_section_per_configured_entry_with_masked_secrets() -> None:
    entries = _entries("providers")
    pricing = [f"pricing.{name}" for name in fields_of(Pricing)]  # a section inside an entry: its own leaves
    assert set(entries) == {
        f"providers.{alias}.{field}"
        for alias in ("oa", "scripted")  # the implicit `providers.scripted` too
        for field in [*(f for f in fields_of(ProviderConfig) if f != "pricing"), *pricing]
    }
    key = entries["providers.oa.api_key"]
    assert key.is_secret and key.value == MASK and key.populated and key.kind == "string"
    assert "sk-very-secret" not in repr(cs.field_entries(_config(), WRITTEN))
    unset = entries["providers.scripted.api_key"]
    assert unset.is_secret and unset.value is None and not unset.populated
    kind = entries["providers.oa.kind"]
    assert kind.kind == "enum" and kind.enum_variants == ["scripted", "openai", "anthropic"] and kind.value == "openai"
    # the implicit entry is not written in the file, though its model sets `kind`
    assert not entries["providers.scripted.kind"].populated


def test_kinds_values_and_populated() -> None:
    entries = _entries()
    assert all(e.kind in KINDS and e.category == e.path.split(".")[0] for e in entries.values())
    assert not any(e.is_env_overridden for e in entries.values())
    limit = entries["limits.max_sessions"]
    assert (limit.kind, limit.value, limit.populated, limit.type_hint) == ("integer", 3, True, "int")
    other = entries["limits.max_connections"]
    assert other.value == 1024 and not other.populated and other.description == "default 1024; >= 1"
    assert entries["limits.outbound_stall_secs"].kind == "float"
    assert entries["gateway.tls_cert"].type_hint == "str | None"
    tools = entries["agents.coder.tools"]
    assert (tools.kind, tools.value, tools.populated) == ("string_array", ["bash"], True)
    grants = entries["permission_profiles.op.grants"]
    assert grants.kind == "object" and grants.value == {"config": ["read"]}
    # an agent's provider is picked from the configured providers
    provider = entries["agents.coder.provider"]
    assert provider.kind == "enum" and provider.enum_variants == ["oa", "scripted"] and provider.value == "oa"
    assert "agents.default.provider" in entries and not entries["agents.default.provider"].populated


def test_prefix_matches_at_segment_boundaries() -> None:
    assert set(_entries("limits.max_sessions")) == {"limits.max_sessions"}
    assert _entries("agents.cod") == {}  # not `agents.coder.*`
    assert set(_entries("agents.")) == set(_entries("agents")) and _entries("agents")
    assert _entries("nope") == {} and _entries("ag") == {}
    assert set(_entries("")) == set(_entries(None))
    assert cs.path_matches_prefix("agents.a.model", "agents.a")
    assert not cs.path_matches_prefix("agents.ab.model", "agents.a")


def test_templates_are_the_map_sections() -> None:
    found = {t.path: t for t in cs.templates()}
    assert set(found) == {"agents", "providers", "permission_profiles", "users"}
    assert found["agents"].value_type == "Agent" and found["agents"].kind == "map" and found["agents"].description


def test_map_keys() -> None:
    config = _config()
    assert cs.map_keys(config, "agents") == ["coder", "default"]
    assert cs.map_keys(config, "providers") == ["oa", "scripted"]
    assert cs.map_keys(config, "users") == []
    assert cs.map_keys(config, "permission_profiles.op.grants") == ["config"]
    for path in ("limits", "agents.coder", "nope", "permission_profiles.ghost.grants", "a..b"):
        with pytest.raises(UnknownProp):
            cs.map_keys(config, path)


def test_the_store_says_what_the_file_holds(tmp_path: Path) -> None:
    assert ConfigStore(tmp_path).written() == {}
    (tmp_path / "config.toml").write_text("# mine\n[limits]\nmax_sessions = 3\n[agents.coder]\nmodel = 'm'\n")
    store = ConfigStore(tmp_path)
    assert store.written() == {"limits": {"max_sessions": 3}, "agents": {"coder": {"model": "m"}}}
    entries = {e.path: e for e in cs.field_entries(store.current, store.written(), "agents")}
    assert entries["agents.coder.model"].populated and not entries["agents.coder.provider"].populated
