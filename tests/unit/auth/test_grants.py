"""Grant strings, grants tables and write-path patterns (R-AUTH-1, R-AUTH-2)."""

from __future__ import annotations

import pytest

from app.auth.grants import (
    ALL_GRANTS,
    InvalidGrant,
    expand_grants,
    normalize_grants_table,
    parse_grant,
    path_allowed,
    validate_path_pattern,
)


@pytest.mark.parametrize(
    ("grant", "expected"),
    [
        ("config:update", ("config", "update")),
        ("Config:Update", ("config", "update")),  # R-AUTH-1: case-insensitive
        ("SESSIONS:EXECUTE", ("sessions", "execute")),
        (" pairing:create ", ("pairing", "create")),
    ],
)
def test_parse_grant(grant: str, expected: tuple[str, str]) -> None:
    # R-AUTH-1
    assert parse_grant(grant) == expected


@pytest.mark.parametrize(
    "grant", ["", "config", "config:", ":read", "config:fly", "cosmos:read", "config:*", "*:read", "a:b:c"]
)
def test_malformed_grants_are_rejected_without_echo(grant: str) -> None:
    # R-AUTH-1; a wildcard is not a grant a method can require
    with pytest.raises(InvalidGrant) as info:
        parse_grant(grant)
    assert not grant or grant not in str(info.value)


def test_vocabulary() -> None:
    # R-AUTH-1: 6 resources x 5 verbs
    assert len(ALL_GRANTS) == 30 and "files:create" in ALL_GRANTS


def test_grants_table_normalization_merges_case_variants() -> None:
    table = {"Config": ["Update"], "config": ["read", "READ"], "files": ["create", "*"]}
    assert normalize_grants_table(table) == {"config": ["read", "update"], "files": ["*"]}


@pytest.mark.parametrize("table", [{"nope": ["read"]}, {"config": ["fly"]}, {"*": ["read"]}])
def test_grants_table_rejects_unknown_names(table: dict[str, list[str]]) -> None:
    with pytest.raises(ValueError):
        normalize_grants_table(table)


def test_expand_grants_star_means_every_verb_of_that_resource() -> None:
    # R-AUTH-2 (decision: "*" allowed as a verb)
    assert expand_grants({"sessions": ["*"]}) == {
        "sessions:create",
        "sessions:read",
        "sessions:update",
        "sessions:delete",
        "sessions:execute",
    }
    assert expand_grants({"Config": ["READ"]}) == {"config:read"}
    assert expand_grants({}) == frozenset()


@pytest.mark.parametrize(
    ("patterns", "prop", "allowed"),
    [
        (["*"], "users.example.uid", True),
        (["limits.max_connections"], "limits.max_connections", True),
        (["limits.max_connections"], "limits.max_sessions", False),
        (["limits.*"], "limits.max_connections", True),
        (["limits.*"], "limits", False),  # prefix.* is strictly below the prefix
        (["limits.*"], "limitsx.a", False),
        (["agents.*"], "agents.default.model", True),
        (["agents.default.*"], "agents.defaultx.model", False),
        (["users.example.*"], "users.example.uid", True),
        (["users.example.*"], "users.other.uid", False),
        (["Limits.*"], "limits.max_connections", False),  # paths are case-sensitive
        ([], "limits.max_connections", False),  # deny by default
        (["gateway.host", "limits.*"], "limits.max_sessions", True),  # union
    ],
)
def test_path_allowed(patterns: list[str], prop: str, allowed: bool) -> None:
    # R-AUTH-2
    assert path_allowed(patterns, prop) is allowed


@pytest.mark.parametrize("pattern", ["*", "limits.*", "a.b.c", "users.my-user_1.*"])
def test_valid_path_patterns(pattern: str) -> None:
    assert validate_path_pattern(pattern) == pattern


@pytest.mark.parametrize("pattern", ["", ".*", "limits.", "limits..x", "limits.*.x", "*.x", "li mits", "a*"])
def test_invalid_path_patterns(pattern: str) -> None:
    with pytest.raises(ValueError):
        validate_path_pattern(pattern)
