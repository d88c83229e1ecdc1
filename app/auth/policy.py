"""Principals and the authorization policy built from `[users]` and `[permission_profiles]` (R-AUTH-1..3, 5).

Deny by default: a principal holds exactly the union of what its profiles give. A `Policy` is an immutable
snapshot of one config generation; callers rebuild it when `ConfigStore.policy_generation` changes, so a
change to users or profiles applies to open connections at their next call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from app.auth.grants import expand_grants, parse_grant, path_allowed
from app.config.schema import OWNER_ID, Config

__all__ = ["CONFIG_UPDATE", "OWNER_ID", "Forbidden", "Policy", "Principal", "check_config_write"]

CONFIG_UPDATE = "config:update"


class Forbidden(Exception):
    """The principal lacks a grant, a config write path or an agent right: the domain's one "forbidden" (-32012;
    `rpc.core.errors.Forbidden` is its wire form). `app.sessions.errors.AgentNotAllowed` is the agent-right case.

    `grant`, `prop` and `index` fill `data.grant`, `data.prop` and `data.index`, `agent` sets `data.agent: true`;
    none of them is a value.
    """

    kind = "forbidden"

    def __init__(
        self,
        message: str,
        *,
        grant: str | None = None,
        prop: str | None = None,
        index: int | None = None,
        agent: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.grant = grant
        self.prop = prop
        self.index = index
        self.agent = agent


@dataclass(frozen=True)
class Principal:
    """Who a connection acts as. `admin` short-circuits every check."""

    id: str
    admin: bool
    user: str | None = None
    grants: frozenset[str] = field(default=frozenset())  # normalized "resource:verb"
    write_paths: tuple[str, ...] = ()
    agents: frozenset[str] = field(default=frozenset())

    def has_grant(self, grant: str) -> bool:
        """`grant` is `resource:verb`, any case. A malformed one raises `InvalidGrant` for non-admins; the
        method registry checks its grants at registration, so a typo can never silently allow or deny."""
        if self.admin or grant in self.grants:  # fast path: the method registry declares canonical grants
            return True
        resource, verb = parse_grant(grant)
        return self.admin or f"{resource}:{verb}" in self.grants

    def may_write(self, prop: str) -> bool:
        """Whether `config_write_paths` cover `prop` (exact, `prefix.*` strictly below, or `*`)."""
        return self.admin or path_allowed(self.write_paths, prop)

    def may_use_agent(self, alias: str) -> bool:
        return self.admin or "*" in self.agents or alias in self.agents


OWNER = Principal(id=OWNER_ID, admin=True)


class Policy:
    """Principals for one config generation. Build it with `Policy.from_config`."""

    def __init__(self, users: dict[str, Principal], uids: dict[int, str]) -> None:
        self._users = MappingProxyType(dict(users))
        self._uids = MappingProxyType(dict(uids))

    @classmethod
    def from_config(cls, config: Config) -> Policy:
        users: dict[str, Principal] = {}
        uids: dict[int, str] = {}
        for name, user in config.users.items():
            # A profile name with no [permission_profiles.<name>] grants nothing: the user may be configured
            # before its profile exists (set-many order), and deny-by-default must hold meanwhile.
            profiles = [
                config.permission_profiles[p] for p in user.permission_profiles if p in config.permission_profiles
            ]
            grants: set[str] = set()
            paths: list[str] = []
            agents: set[str] = set()
            for profile in profiles:
                grants |= expand_grants(profile.grants)
                paths.extend(p for p in profile.config_write_paths if p not in paths)
                agents.update(profile.allowed_agents)
            users[name] = Principal(
                id=user.principal_id or f"user:{name}",
                admin=any(p.admin for p in profiles),
                user=name,
                grants=frozenset(grants),
                write_paths=tuple(paths),
                agents=frozenset(agents),
            )
            if user.uid is not None:
                uids[user.uid] = name  # unique: the schema rejects two users with one uid
        return cls(users, uids)

    def owner(self) -> Principal:
        """The daemon owner: admin, id `owner`."""
        return OWNER

    def for_uid(self, uid: int, daemon_uid: int) -> Principal | None:
        """Local peer by OS uid (R-AUTH-3): the daemon's own uid or root is the owner; otherwise the user
        whose `uid` matches, or None (the caller answers -32010)."""
        if uid == daemon_uid or uid == 0:
            return OWNER
        name = self._uids.get(uid)
        return None if name is None else self._users[name]

    def for_user(self, name: str) -> Principal | None:
        """The principal of `[users.<name>]` (a paired token's user), or None when the user is gone."""
        return self._users.get(name)

    def users(self) -> tuple[str, ...]:
        return tuple(self._users)


def check_config_write(principal: Principal, props: Sequence[str], *, indexed: bool = True) -> None:
    """R-CFG-3: `config:update` plus a write path for every prop, else `Forbidden`.

    The first forbidden prop rejects the whole request, with its index (when `indexed`) and prop.
    """
    if not principal.has_grant(CONFIG_UPDATE):
        raise Forbidden(f"missing grant {CONFIG_UPDATE}", grant=CONFIG_UPDATE)
    for index, prop in enumerate(props):
        if not principal.may_write(prop):
            raise Forbidden("config path not writable", prop=prop, index=index if indexed else None)
