"""The method registry (R-ARCH-2)."""

from __future__ import annotations

import pytest

from rpc.core.registry import NoParams, Registry
from rpc.methods import build_registry


@pytest.mark.req("R-ARCH-2")
def test_registry_refuses_malformed_or_non_canonical_grants() -> None:
    registry = Registry()
    for grant in ("config:everything", "Config:Read", "nope"):
        with pytest.raises(ValueError):
            registry.method("x", params=NoParams, grant=grant)


@pytest.mark.req("R-ARCH-2")
def test_registry_refuses_a_method_twice() -> None:
    registry = Registry()
    registry.method("x", params=NoParams, grant="system:read")(lambda c, p: None)
    with pytest.raises(ValueError):
        registry.method("x", params=NoParams, grant="system:read")(lambda c, p: None)


@pytest.mark.req("R-AUTH-5")
def test_every_method_declares_the_spec_grant() -> None:
    expected = {
        "initialize": None,
        "status": "system:read",
        "system/metrics": "system:read",
        "session/new": "sessions:create",
        "session/prompt": "sessions:execute",
        "session/cancel": "sessions:execute",
        "session/approve": "sessions:execute",
        "session/list": "sessions:read",
        "session/messages": "sessions:read",
        "session/close": "sessions:update",
        "session/kill": "sessions:delete",
        "session/delete": "sessions:delete",
        "config/get": "config:read",
        "config/set": "config:update",
        "config/delete": "config:update",
        "config/set-many": "config:update",
        "config/sections": "config:read",
        "config/list": "config:read",
        "config/map-keys": "config:read",
        "config/templates": "config:read",
        "agents/status": "sessions:read",
        "logs/subscribe": "system:read",
        "pairing/create": "pairing:create",
        "pairing/list": "pairing:read",
        "pairing/revoke": "pairing:delete",
    }
    registry = build_registry()
    declared = {name: spec.grant for name in registry.names() if (spec := registry.get(name)) is not None}
    assert {k: v for k, v in declared.items() if k in expected} == expected
    assert set(expected) <= set(declared)
