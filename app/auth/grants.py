"""Grants (`resource:verb`) and config write-path patterns (R-AUTH-1, R-AUTH-2).

Pure functions over strings: no I/O and no imports from the rest of `app`, because `app.config.schema` uses
them to validate `[permission_profiles]` and `app.auth.policy` builds on top of `app.config`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "ALL_GRANTS",
    "RESOURCES",
    "VERBS",
    "WILDCARD",
    "InvalidGrant",
    "expand_grants",
    "normalize_grants_table",
    "parse_grant",
    "path_allowed",
    "validate_path_pattern",
]

RESOURCES: tuple[str, ...] = ("system", "sessions", "config", "files", "agents", "pairing")
VERBS: tuple[str, ...] = ("create", "read", "update", "delete", "execute")
# Every verb of a resource, in a profile's verb list only: not a resource (that is `admin = true`),
# nor a `has_grant` query.
WILDCARD = "*"
ALL_GRANTS: frozenset[str] = frozenset(f"{r}:{v}" for r in RESOURCES for v in VERBS)

# Same alphabet as TOML bare keys, so every path segment is also a valid unquoted key.
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+\Z")


class InvalidGrant(ValueError):
    """A grant string that is not `resource:verb` with a known resource and verb."""


def parse_grant(grant: str) -> tuple[str, str]:
    """`"Config:Update"` -> `("config", "update")`; raises `InvalidGrant` for anything else."""
    resource, sep, verb = grant.strip().lower().partition(":")
    if not sep or resource not in RESOURCES or verb not in VERBS:
        # The message never repeats the input: grants come from config and requests.
        raise InvalidGrant("grant must be resource:verb with a known resource and verb")
    return resource, verb


def normalize_grants_table(table: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Validate and lower-case a profile's `grants = {resource = [verbs]}` table.

    Keys that differ only by case are merged; verbs are de-duplicated and put in canonical order.
    Raises `ValueError` (with a message that names no value) on an unknown resource or verb.
    """
    merged: dict[str, set[str]] = {}
    for resource, verbs in table.items():
        key = resource.strip().lower()
        if key not in RESOURCES:
            raise ValueError(f"unknown resource; expected one of {', '.join(RESOURCES)}")
        bucket = merged.setdefault(key, set())
        for verb in verbs:
            v = verb.strip().lower()
            if v != WILDCARD and v not in VERBS:
                raise ValueError(f"unknown verb; expected one of {', '.join(VERBS)} or '*'")
            bucket.add(v)
    # Canonical form: resources and verbs in vocabulary order, and "*" alone when present.
    return {
        r: [WILDCARD] if WILDCARD in merged[r] else [v for v in VERBS if v in merged[r]]
        for r in RESOURCES
        if r in merged
    }


def expand_grants(table: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The set of `resource:verb` strings a (normalized) grants table gives; `"*"` expands to every verb."""
    out: set[str] = set()
    for resource, verbs in normalize_grants_table(table).items():
        for verb in verbs:
            out.update(f"{resource}:{v}" for v in (VERBS if verb == WILDCARD else (verb,)))
    return frozenset(out)


def validate_path_pattern(pattern: str) -> str:
    """Check one `config_write_paths` entry: `*`, an exact dotted path, or `prefix.*`; returns it."""
    if pattern == WILDCARD:
        return pattern
    body = pattern[:-2] if pattern.endswith(".*") else pattern
    if not body or not all(_SEGMENT.match(seg) for seg in body.split(".")):
        raise ValueError("write path must be '*', a dotted property path, or 'prefix.*'")
    return pattern


def path_allowed(patterns: Iterable[str], prop: str) -> bool:
    """Whether `prop` matches one of the patterns.

    `*` matches every path; `prefix.*` matches every path strictly below `prefix` (not `prefix` itself, so
    `users.*` never allows replacing the whole `users` table); anything else must match exactly. Paths are
    case-sensitive, like the TOML keys they name.
    """
    for pattern in patterns:
        if pattern in (WILDCARD, prop):
            return True
        if pattern.endswith(".*") and prop.startswith(pattern[:-1]) and len(prop) > len(pattern) - 1:
            return True
    return False
