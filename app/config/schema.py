"""The typed shape of `config.toml`; every key with its default (documented in docs/config.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

# Map keys (`users.<name>`, `agents.<alias>`, ...) are property-path segments, so they must be TOML bare keys:
# a dot or a quote in a name would make `users.<name>.uid` ambiguous.
KEY_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
OWNER_ID = "owner"


class Section(BaseModel):
    # Unknown keys are refused on write (typos are errors) but the TOML loader keeps them in the file.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Limits(Section):
    """Per-connection and daemon-wide limits (SPEC §5, R-LIM)."""

    max_frame_bytes: int = Field(8_388_608, ge=1024)
    max_inflight_per_connection: int = Field(64, ge=1)
    max_outbound_buffer_bytes: int = Field(16_777_216, ge=65_536)
    outbound_stall_secs: float = Field(60.0, gt=0)
    max_connections: int = Field(1024, ge=1)
    max_uploads_per_connection: int = Field(4, ge=0)
    upload_budget_bytes: int = Field(268_435_456, ge=0)
    upload_idle_secs: float = Field(300.0, gt=0)
    max_sessions: int = Field(64, ge=0)
    max_pending_client_requests: int = Field(16, ge=0)
    # Characters of one prompt as typed (`session/prompt`, REST prompt, webhook message), before attachment markers.
    max_prompt_chars: int = Field(1_000_000, ge=1)


class Tools(Section):
    ask_timeout_secs: float = Field(120.0, gt=0)
    approval_timeout_secs: float = Field(120.0, gt=0)
    bash_timeout_secs: float = Field(60.0, gt=0)
    output_limit_bytes: int = Field(65_536, ge=1024)


class Daemon(Section):
    ephemeral_grace_secs: float = Field(1.0, ge=0)
    # How often config.toml is checked for edits (R-CFG-6: noticed within 2 s); 0 = only on SIGHUP.
    config_poll_secs: float = Field(0.5, ge=0, le=1.5)


class Context(Section):
    max_messages: int = Field(200, ge=1)
    max_chars: int = Field(200_000, ge=1)


class Gateway(Section):
    host: str = "127.0.0.1"
    port: int = Field(42617, ge=0, le=65535)
    tls_cert: str | None = None
    tls_key: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)


class Compat(Section):
    """Compatibility with other clients' expectations (docs/zerocode.md)."""

    # The ZeroClaw release whose wire the zerocode dialect follows; zerocode refuses a daemon of any other version.
    zerocode_version: str = Field("0.8.4", min_length=1, max_length=64)


class Storage(Section):
    # None = SQLite at <data_dir>/zeroclaw.db
    url: str | None = None


class Provider(Section):
    kind: Literal["scripted", "openai"] = "scripted"
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    timeout_secs: float = Field(60.0, gt=0)


class Agent(Section):
    provider: str = "scripted"
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] = Field(default_factory=lambda: ["bash", "read_file", "write_file", "ask_user", "poll"])
    auto_approve: list[str] = Field(default_factory=list)
    workspace_dir: str | None = None
    max_turn_steps: int = Field(16, ge=1)


class PermissionProfile(Section):
    admin: bool = False
    grants: dict[str, list[str]] = Field(default_factory=dict)
    config_write_paths: list[str] = Field(default_factory=list)
    allowed_agents: list[str] = Field(default_factory=list)

    # Imported inside the validators: app.auth sits above app.config (the policy reads Config), so a
    # module-level import would run app/auth/__init__ while this module is half-initialized.
    @field_validator("grants")
    @classmethod
    def _grants(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        from app.auth.grants import normalize_grants_table

        return normalize_grants_table(value)

    @field_validator("config_write_paths")
    @classmethod
    def _write_paths(cls, value: list[str]) -> list[str]:
        from app.auth.grants import validate_path_pattern

        return [validate_path_pattern(p) for p in value]

    @field_validator("allowed_agents")
    @classmethod
    def _agents(cls, value: list[str]) -> list[str]:
        if any(a != "*" and not KEY_RE.match(a) for a in value):
            raise ValueError("agent must be '*' or an alias of letters, digits, '_' or '-'")
        return value


class User(Section):
    uid: int | None = None
    permission_profiles: list[str] = Field(default_factory=list)
    principal_id: str | None = None

    @field_validator("uid")
    @classmethod
    def _uid(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("uid must be >= 0")
        return value

    @field_validator("principal_id")
    @classmethod
    def _principal_id(cls, value: str | None) -> str | None:
        # "owner" is the daemon owner's id; a user taking it would own the owner's sessions.
        if value is not None and (not value.strip() or value == OWNER_ID):
            raise ValueError("principal_id must be non-empty and not a reserved id")
        return value


def _default_agents() -> dict[str, Agent]:
    return {"default": Agent()}


def _default_providers() -> dict[str, Provider]:
    return {"scripted": Provider(kind="scripted")}


class Config(Section):
    """The whole configuration. `agents.default` and `providers.scripted` always exist."""

    limits: Limits = Field(default_factory=Limits)
    tools: Tools = Field(default_factory=Tools)
    daemon: Daemon = Field(default_factory=Daemon)
    context: Context = Field(default_factory=Context)
    gateway: Gateway = Field(default_factory=Gateway)
    storage: Storage = Field(default_factory=Storage)
    compat: Compat = Field(default_factory=Compat)
    agents: dict[str, Agent] = Field(default_factory=_default_agents)
    providers: dict[str, Provider] = Field(default_factory=_default_providers)
    permission_profiles: dict[str, PermissionProfile] = Field(default_factory=dict)
    users: dict[str, User] = Field(default_factory=dict)

    @field_validator("agents", "providers", "permission_profiles", "users")
    @classmethod
    def _keys(cls, value: Mapping[str, object]) -> Mapping[str, object]:
        if not all(KEY_RE.match(k) for k in value):
            raise ValueError("names must be non-empty and use only letters, digits, '_' or '-'")
        return value

    @field_validator("users")
    @classmethod
    def _users_unique(cls, value: dict[str, User]) -> dict[str, User]:
        # One uid must resolve to one principal, and principal ids key session ownership.
        uids = [u.uid for u in value.values() if u.uid is not None]
        if len(uids) != len(set(uids)):
            raise ValueError("two users have the same uid")
        ids = [u.principal_id or f"user:{name}" for name, u in value.items()]
        if len(ids) != len(set(ids)):
            raise ValueError("two users have the same principal_id")
        return value

    def model_post_init(self, __context: object) -> None:
        self.agents.setdefault("default", Agent())
        self.providers.setdefault("scripted", Provider(kind="scripted"))
