"""Principals and the policy built from [users] and [permission_profiles] (R-AUTH-2, R-AUTH-3, R-CFG-3)."""

from __future__ import annotations

import dataclasses

import pytest

from app.auth.grants import InvalidGrant
from app.auth.policy import Forbidden, Policy, Principal, check_config_write
from app.config import schema as config_schema
from app.config.schema import Config

DAEMON_UID = 1000


def make_config() -> Config:
    return config_schema.convert(
        {
            "permission_profiles": {
                "reader": {"grants": {"System": ["Read"], "sessions": ["read"]}, "allowed_agents": ["default"]},
                "operator": {
                    "grants": {"sessions": ["*"], "config": ["update"]},
                    "config_write_paths": ["limits.*", "agents.default.model"],
                    "allowed_agents": ["helper"],
                },
                "root": {"admin": True},
                "everyone": {"allowed_agents": ["*"]},
            },
            "users": {
                "alice": {"uid": 1001, "permission_profiles": ["reader", "operator"]},
                "bob": {"uid": 1002, "permission_profiles": ["reader"], "principal_id": "person:bob"},
                "carol": {"uid": 1003, "permission_profiles": ["root"]},
                "dave": {"permission_profiles": ["does-not-exist"]},
                "erin": {"uid": 1005, "permission_profiles": ["everyone"]},
            },
        }
    )


@pytest.fixture
def policy() -> Policy:
    return Policy.from_config(make_config())


def user(policy: Policy, name: str) -> Principal:
    principal = policy.for_user(name)
    assert principal is not None
    return principal


# -- principal resolution (R-AUTH-3) -----------------------------------------------------------------------


def test_daemon_uid_and_root_are_the_owner(policy: Policy) -> None:
    # R-AUTH-3
    for uid in (DAEMON_UID, 0):
        principal = policy.for_uid(uid, DAEMON_UID)
        assert principal == policy.owner()
        assert principal is not None and principal.id == "owner" and principal.admin and principal.user is None


def test_other_uids_map_to_their_user_or_nobody(policy: Policy) -> None:
    # R-AUTH-3
    alice = policy.for_uid(1001, DAEMON_UID)
    assert alice is not None and (alice.id, alice.user, alice.admin) == ("user:alice", "alice", False)
    assert policy.for_uid(4242, DAEMON_UID) is None


def test_principal_id_defaults_and_override(policy: Policy) -> None:
    # R-AUTH-2
    assert user(policy, "alice").id == "user:alice"
    assert user(policy, "bob").id == "person:bob"
    assert policy.for_user("nobody") is None


def test_principal_is_frozen(policy: Policy) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        user(policy, "alice").admin = True  # type: ignore[misc]


# -- grants (R-AUTH-1, R-AUTH-2) ---------------------------------------------------------------------------


def test_profiles_merge_by_union(policy: Policy) -> None:
    # R-AUTH-2
    alice = user(policy, "alice")
    assert alice.has_grant("system:read")  # from reader
    assert alice.has_grant("sessions:execute")  # from operator's "*"
    assert alice.has_grant("config:update")
    assert alice.may_use_agent("default") and alice.may_use_agent("helper")
    assert not alice.may_use_agent("other")


def test_grant_checks_are_case_insensitive(policy: Policy) -> None:
    # R-AUTH-1
    bob = user(policy, "bob")
    assert bob.has_grant("SYSTEM:read") and bob.has_grant("System:Read")


def test_deny_by_default(policy: Policy) -> None:
    # R-AUTH-2
    bob = user(policy, "bob")
    assert not bob.has_grant("config:update")
    assert not bob.has_grant("pairing:create")
    assert not bob.may_write("limits.max_connections")
    dave = user(policy, "dave")  # references an unknown profile: grants nothing
    assert not dave.admin and not dave.grants and not dave.write_paths and not dave.agents
    assert not dave.may_use_agent("default")


def test_admin_is_everything(policy: Policy) -> None:
    # R-AUTH-2
    carol = user(policy, "carol")
    assert carol.admin and carol.id == "user:carol"
    assert carol.has_grant("pairing:delete") and carol.may_write("users.x.uid") and carol.may_use_agent("any")


def test_agent_wildcard(policy: Policy) -> None:
    assert user(policy, "erin").may_use_agent("whatever")


def test_malformed_grant_query_raises(policy: Policy) -> None:
    # Admins short-circuit before parsing (hot path); the method registry refuses malformed grants at
    # registration instead (tests/unit/rpc/test_dispatcher.py).
    with pytest.raises(InvalidGrant):
        user(policy, "bob").has_grant("config:everything")


def test_write_paths(policy: Policy) -> None:
    # R-AUTH-2: exact path and prefix.*
    alice = user(policy, "alice")
    assert alice.may_write("limits.max_connections")
    assert alice.may_write("agents.default.model")
    assert not alice.may_write("agents.default.system_prompt")
    assert not alice.may_write("limits")
    assert not alice.may_write("users.alice.permission_profiles")


def test_policy_reflects_config_changes() -> None:
    # R-AUTH-5: a new Policy from the new config is the new truth
    config = make_config()
    config.permission_profiles["operator"].config_write_paths = []
    assert not user(Policy.from_config(config), "alice").may_write("limits.max_connections")


def test_empty_config_has_only_the_owner() -> None:
    policy = Policy.from_config(Config())
    assert policy.users() == ()
    assert policy.for_uid(1001, DAEMON_UID) is None
    assert policy.for_uid(DAEMON_UID, DAEMON_UID) == policy.owner()


# -- check_config_write (R-CFG-3) --------------------------------------------------------------------------


def test_check_config_write_needs_the_grant_first(policy: Policy) -> None:
    # R-CFG-3: lacking config:update names the grant
    with pytest.raises(Forbidden) as info:
        check_config_write(user(policy, "bob"), ["limits.max_connections"])
    assert (info.value.grant, info.value.index, info.value.prop) == ("config:update", None, None)


def test_check_config_write_names_the_first_forbidden_entry(policy: Policy) -> None:
    # R-CFG-3: one forbidden path rejects the batch, even after allowed ones
    props = ["limits.max_connections", "agents.default.model", "users.alice.uid", "gateway.host"]
    with pytest.raises(Forbidden) as info:
        check_config_write(user(policy, "alice"), props)
    assert (info.value.index, info.value.prop, info.value.grant) == (2, "users.alice.uid", None)
    with pytest.raises(Forbidden) as single:
        check_config_write(user(policy, "alice"), ["gateway.host"], indexed=False)
    assert single.value.index is None


def test_check_config_write_allows(policy: Policy) -> None:
    check_config_write(user(policy, "alice"), ["limits.max_connections", "agents.default.model"])
    check_config_write(policy.owner(), ["users.x.uid", "permission_profiles.p.admin"])


# -- schema rules the policy relies on ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "users",
    [
        {"a": {"uid": 5}, "b": {"uid": 5}},  # one uid, one principal
        {"a": {"principal_id": "user:b"}, "b": {}},  # principal ids key session ownership
        {"a": {"principal_id": "owner"}},  # reserved
    ],
)
def test_ambiguous_users_are_rejected_by_the_schema(users: dict[str, dict[str, object]]) -> None:
    with pytest.raises(ValueError):
        config_schema.convert({"users": users})
