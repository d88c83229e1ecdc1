"""Property paths: parsing, value checks, masking, map entries, staging into a tomlkit document (R-CFG-1)."""

from __future__ import annotations

from typing import Any

import pytest
import tomlkit

from app.config import props
from app.config.errors import InvalidValue, UnknownProp
from app.config.schema import Config, Provider
from app.config.secret import Secret


def staged(*sets: tuple[str, Any], text: str = "") -> tuple[tomlkit.TOMLDocument, Config]:
    doc = tomlkit.parse(text)
    for prop, value in sets:
        props.apply_set(doc, prop, value)
    known, _ = props.split_known(doc.unwrap())
    return doc, props.validate_data(known)


# -- path parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prop",
    [
        "limits.max_connections",
        "agents.default.model",
        "providers.local.base_url",
        "users.example.uid",
        "users.example.permission_profiles",
        "permission_profiles.operator.grants",
        "permission_profiles.operator.grants.config",
        "users.example",
        "limits",
        "users",
        "agents.my-agent_2.tools",
    ],
)
def test_known_paths_resolve(prop: str) -> None:
    # R-CFG-1
    assert props.resolve(prop).parts == tuple(prop.split("."))


@pytest.mark.parametrize(
    "prop",
    [
        "",
        "limits.",
        ".limits",
        "limits..max_connections",
        "limits.nope",
        "nope",
        "limits.max_connections.deeper",
        "users.example.uid.x",
        "users.exa mple.uid",
        'users."quoted".uid',
        "users.a.b.uid",
        "permission_profiles.op.grants.config.read",
        "Limits.max_connections",  # keys are case-sensitive
        "x" * 300,
    ],
)
def test_unknown_or_malformed_paths_are_unknown_prop(prop: str) -> None:
    # R-CFG-1
    with pytest.raises(UnknownProp) as info:
        props.resolve(prop)
    assert info.value.errors and info.value.errors[0]["type"] == "unknown_prop"


def test_map_entry_names_mark_their_schema_position() -> None:
    assert props.resolve("users.example.uid").shape == ("users", None, "uid")
    assert props.resolve("permission_profiles.op.grants.config").shape == (
        "permission_profiles",
        None,
        "grants",
        None,
    )


# -- value checks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("limits.max_connections", "5"),  # strings are not coerced
        ("limits.max_connections", True),  # nor booleans
        ("limits.max_connections", 1.5),
        ("limits.max_connections", 0),  # ge=1
        ("limits.outbound_stall_secs", 0),  # gt=0
        ("gateway.port", 70000),
        ("providers.local.kind", "gemini"),
        ("users.example.uid", "1001"),
        ("users.example.uid", -1),
        ("users.example.permission_profiles", "operator"),
        ("users.example.principal_id", "owner"),
        ("users.example", {"uid": 1, "extra": 2}),
        ("permission_profiles.op.grants", {"config": ["fly"]}),
        ("permission_profiles.op.grants", {"everything": ["read"]}),
        ("permission_profiles.op.config_write_paths", ["limits..x"]),
        ("permission_profiles.op.allowed_agents", ["a b"]),
        ("limits.max_connections", 2**70),
        ("limits.outbound_stall_secs", float("inf")),
        ("limits.max_connections", object()),
    ],
)
def test_bad_values_are_invalid_value_and_never_echoed(prop: str, value: Any) -> None:
    # R-CFG-1, R-SEC-6
    doc = tomlkit.parse("")
    with pytest.raises(InvalidValue) as info:
        props.apply_set(doc, prop, value)
    err = info.value
    assert err.prop is not None and err.errors
    assert all(e["field"].startswith(prop) for e in err.errors)
    rendered = repr(err.errors) + str(err)
    if isinstance(value, str):
        assert value not in rendered
    assert doc.as_string() == ""


def test_secret_value_never_appears_in_error() -> None:
    # R-SEC-6: the value is a secret that fails validation as a whole entry
    secret = "sk-very-secret-123"
    with pytest.raises(InvalidValue) as info:
        props.apply_set(tomlkit.parse(""), "providers.p", {"api_key": secret, "kind": "nope"})
    assert secret not in repr(info.value.errors) + str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_int_accepted_for_float_fields() -> None:
    _, config = staged(("limits.outbound_stall_secs", 5))
    assert config.limits.outbound_stall_secs == 5.0


def test_grants_are_case_insensitive_and_normalized() -> None:
    # R-AUTH-1
    _, config = staged(("permission_profiles.op.grants", {"Config": ["Update", "READ"], "config": ["read"]}))
    assert config.permission_profiles["op"].grants == {"config": ["read", "update"]}


# -- map entries -------------------------------------------------------------------------------------------


def test_map_entries_are_created_on_first_set() -> None:
    # R-CFG-1
    doc, config = staged(
        ("users.example.uid", 1001),
        ("users.example.permission_profiles", ["operator"]),
        ("providers.local.base_url", "http://127.0.0.1:8080"),
        ("permission_profiles.operator.grants.config", ["update"]),
    )
    assert config.users["example"].uid == 1001
    assert config.users["example"].permission_profiles == ["operator"]
    assert config.providers["local"].base_url == "http://127.0.0.1:8080"
    assert config.providers["local"].kind == "scripted"
    assert config.permission_profiles["operator"].grants == {"config": ["update"]}
    assert "[users.example]" in doc.as_string()


def test_whole_entry_set_replaces_it() -> None:
    _, config = staged(("users.example", {"uid": 5, "principal_id": None}))
    assert config.users["example"].uid == 5 and config.users["example"].principal_id is None


def test_null_resets_an_optional_key_without_creating_entries() -> None:
    doc, config = staged(("agents.default.model", "m1"), ("agents.default.model", None))
    assert config.agents["default"].model is None
    doc, _ = staged(("users.ghost.principal_id", None))
    assert doc.as_string() == ""


def test_delete_resets_to_default_and_removes_entries() -> None:
    # R-CFG-1
    doc, _ = staged(("limits.max_connections", 5), ("users.example.uid", 1001), ("users.other.uid", 1002))
    props.apply_delete(doc, "limits.max_connections")
    props.apply_delete(doc, "users.example")
    props.apply_delete(doc, "users.nobody.uid")  # not set: no-op
    config = props.validate_data(props.split_known(doc.unwrap())[0])
    assert config.limits.max_connections == 1024
    assert set(config.users) == {"other"}
    with pytest.raises(UnknownProp):
        props.apply_delete(doc, "limits.nope")


def test_delete_of_default_entries_restores_them() -> None:
    doc, _ = staged(("agents.default.model", "m"))
    props.apply_delete(doc, "agents.default")
    config = props.validate_data(props.split_known(doc.unwrap())[0])
    assert config.agents["default"].model is None


def test_set_into_an_inline_table_stays_valid_toml() -> None:
    doc, config = staged(("users.b.uid", 3), text="users = { a = { uid = 1 } }\n")
    assert config.users["a"].uid == 1 and config.users["b"].uid == 3
    assert tomlkit.parse(doc.as_string()).unwrap()["users"]["b"] == {"uid": 3}


# -- reads and masking -------------------------------------------------------------------------------------


def test_get_masks_secrets() -> None:
    # R-CFG-1
    config = Config(providers={"local": Provider(kind="openai", api_key=Secret("sk-123"))})
    assert props.get(config, "providers.local.api_key") == "***"
    assert props.get(config, "providers.local")["api_key"] == "***"
    whole = props.get(config)
    assert whole["providers"]["local"]["api_key"] == "***"
    assert whole["providers"]["scripted"]["api_key"] is None  # unset stays null
    assert "sk-123" not in repr(whole)


def test_get_values_and_missing_entries() -> None:
    config = Config()
    assert props.get(config, "limits.max_connections") == 1024
    assert props.get(config, "agents.default.tools")[0] == "bash"
    with pytest.raises(UnknownProp):
        props.get(config, "users.nobody.uid")
    with pytest.raises(UnknownProp):
        props.get(config, "limits.nope")


def test_split_known_reports_unknown_paths() -> None:
    data = {"limits": {"max_connections": 3, "typo": 1}, "extra": {"a": 1}, "users": {"u": {"uid": 1, "x": 2}}}
    known, unknown = props.split_known(data)
    assert unknown == ["limits.typo", "extra", "users.u.x"]
    assert known == {"limits": {"max_connections": 3}, "users": {"u": {"uid": 1}}}


def test_grant_resource_paths_are_case_insensitive() -> None:
    # R-AUTH-1: deleting grants.config also removes a hand-written `Config` key (no silent non-revocation)
    doc, config = staged(text='[permission_profiles.op.grants]\nConfig = ["update"]\nfiles = ["create"]\n')
    assert config.permission_profiles["op"].grants["config"] == ["update"]
    assert props.get(config, "permission_profiles.op.grants.CONFIG") == ["update"]
    props.apply_delete(doc, "permission_profiles.op.grants.config")
    config = props.validate_data(props.split_known(doc.unwrap())[0])
    assert config.permission_profiles["op"].grants == {"files": ["create"]}
    props.apply_set(doc, "permission_profiles.op.grants.Files", ["read"])
    config = props.validate_data(props.split_known(doc.unwrap())[0])
    assert config.permission_profiles["op"].grants == {"files": ["read"]}


def test_unknown_grant_resource_fails_whole_validation() -> None:
    doc, _ = staged()
    props.apply_set(doc, "permission_profiles.op.grants.cosmos", ["read"])
    with pytest.raises(InvalidValue) as info:
        props.validate_data(props.split_known(doc.unwrap())[0])
    assert info.value.errors[0]["field"] == "permission_profiles.op.grants"


def test_empty_entry_object_creates_the_entry() -> None:
    doc, config = staged(("users.empty", {}))
    assert "empty" in config.users and config.users["empty"].uid is None
    assert props.validate_data(props.split_known(tomlkit.parse(doc.as_string()).unwrap())[0]) == config
