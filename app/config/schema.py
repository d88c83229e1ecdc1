"""The typed shape of `config.toml`; every key with its default (documented in docs/config.md).

msgspec Structs, not pydantic models: the daemon validates its config before it can serve, and importing pydantic
and building these models cost more than the rest of a warm start (issue 15, docs/operations.md "Fast start").
`convert` validates data into a `Config`; constructing a Struct directly does not validate (tests build known-good
values that way). A field validator is the section's `__post_init__`, which msgspec runs while converting and
reports at the section's path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, TypeGuard, get_args, get_origin

import msgspec
from msgspec import Meta, field

from app.config.secret import Secret

# Map keys are property-path segments, so bare keys: a dot would make `users.<name>.uid` ambiguous.
KEY_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
OWNER_ID = "owner"


class Section(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # Unknown keys are refused on write (typos are errors) but the TOML loader keeps them in the file.
    pass


def invalid_field(name: str, message: str) -> ValueError:
    """A check's error about field `name` of the section being checked: msgspec locates a `__post_init__` error at
    the section itself, and `app.validation` reads the `"<field>: "` prefix this puts on `message` as the field."""
    return ValueError(f"{name}: {message}")


@contextmanager
def field_named(name: str) -> Iterator[None]:
    """A `ValueError` raised inside (by a callee that does not know the field) is about field `name`."""
    try:
        yield
    except ValueError as exc:
        raise invalid_field(name, str(exc)) from None


class Limits(Section):
    """Per-connection and daemon-wide limits (SPEC §5, R-LIM)."""

    max_frame_bytes: Annotated[int, Meta(ge=1024)] = 8_388_608
    max_inflight_per_connection: Annotated[int, Meta(ge=1)] = 64
    max_outbound_buffer_bytes: Annotated[int, Meta(ge=65_536)] = 16_777_216
    outbound_stall_secs: Annotated[float, Meta(gt=0)] = 60.0
    max_connections: Annotated[int, Meta(ge=1)] = 1024
    max_uploads_per_connection: Annotated[int, Meta(ge=0)] = 4
    upload_budget_bytes: Annotated[int, Meta(ge=0)] = 268_435_456
    upload_idle_secs: Annotated[float, Meta(gt=0)] = 300.0
    max_sessions: Annotated[int, Meta(ge=0)] = 64
    max_pending_client_requests: Annotated[int, Meta(ge=0)] = 16
    # Characters of one prompt as typed (any surface), before attachment markers.
    max_prompt_chars: Annotated[int, Meta(ge=1)] = 1_000_000
    # Latest `session/update`s kept per live session for `session/attach` to replay (R-MULTI-2).
    replay_events: Annotated[int, Meta(ge=1)] = 10_000


class Permissions(Section):
    """Permission rules (R-GUARD-1): patterns such as `bash(git status*)`, `write_file(src/**)`, `mcp__github__*`.
    Deny wins over ask, ask over allow; a call no rule matches gets its tool's default (docs/security.md)."""

    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Imported here: the patterns module is small, but the config must not import the agents package eagerly.
        from app.agents.permissions.patterns import parse_pattern

        for name in ("allow", "ask", "deny"):
            with field_named(name):
                for text in getattr(self, name):
                    parse_pattern(text)


class BashSettings(Section):
    """The `bash` tool's sandbox (R-GUARD-4, docs/security.md)."""

    # auto: bubblewrap when it works here, else unsandboxed with one warning; bwrap: required; off: never.
    sandbox: Literal["auto", "bwrap", "off"] = "auto"
    sandbox_policy: Literal["workspace-write", "read-only", "workspace-write-net"] = "workspace-write"
    # Limits inside the sandbox: processes (pids cgroup or RLIMIT_NPROC), address space, file size, CPU seconds.
    max_processes: Annotated[int, Meta(ge=1)] = 256
    max_memory_bytes: Annotated[int, Meta(ge=16_777_216)] = 4_294_967_296
    max_file_bytes: Annotated[int, Meta(ge=1024)] = 1_073_741_824
    max_cpu_secs: Annotated[int, Meta(ge=1)] = 600


class Tools(Section):
    bash: BashSettings = field(default_factory=BashSettings)
    ask_timeout_secs: Annotated[float, Meta(gt=0)] = 120.0
    approval_timeout_secs: Annotated[float, Meta(gt=0)] = 120.0
    bash_timeout_secs: Annotated[float, Meta(gt=0)] = 60.0
    output_limit_bytes: Annotated[int, Meta(ge=1024)] = 65_536


class Daemon(Section):
    ephemeral_grace_secs: Annotated[float, Meta(ge=0)] = 1.0
    # How often config.toml is checked for edits (R-CFG-6: noticed within 2 s); 0 = only on SIGHUP.
    config_poll_secs: Annotated[float, Meta(ge=0, le=1.5)] = 0.5


class Context(Section):
    max_messages: Annotated[int, Meta(ge=1)] = 200
    max_chars: Annotated[int, Meta(ge=1)] = 200_000


class Gateway(Section):
    host: str = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535)] = 42617
    tls_cert: str | None = None
    tls_key: str | None = None
    allowed_hosts: list[str] = field(default_factory=list)


class Wss(Section):
    """zerocode's remote mode (R-SVC-4, docs/zerocode.md): off by default, TLS only, a paired token per peer."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535)] = 9781  # ZeroClaw's own [wss] port
    tls_cert: str | None = None
    tls_key: str | None = None

    def start_problem(self) -> str | None:
        """Why an enabled listener cannot start (checked before anything listens), or None."""
        if self.enabled and not (self.tls_cert and self.tls_key):
            return "[wss] is enabled without TLS: set [wss] tls_cert and tls_key (remote mode serves wss:// only)"
        return None


class Compat(Section):
    """Compatibility with other clients' expectations (docs/zerocode.md)."""

    # The ZeroClaw release the zerocode dialect follows; zerocode refuses any other version.
    zerocode_version: Annotated[str, Meta(min_length=1, max_length=64)] = "0.8.4"


class Storage(Section):
    # None = SQLite at <data_dir>/zeroclaw.db
    url: str | None = None


class Telemetry(Section):
    """OpenTelemetry traces of turns (R-MODEL-6): on with the `zeroclaw[otel]` extra and an OTLP endpoint."""

    # An OTLP/HTTP collector's base URL (`http://127.0.0.1:4318`); unset: `OTEL_EXPORTER_OTLP_ENDPOINT` decides.
    otlp_endpoint: str | None = None
    # The traces' `service.name`; unset: `OTEL_SERVICE_NAME`, else "zeroclaw".
    service_name: str | None = None

    def __post_init__(self) -> None:
        if self.otlp_endpoint is not None and not self.otlp_endpoint.startswith(("http://", "https://")):
            raise invalid_field("otlp_endpoint", "an OTLP/HTTP endpoint starts with http:// or https://")


class Pricing(Section):
    """What a provider's tokens cost, in USD per million tokens (R-MODEL-5); a price left out counts as unpriced."""

    input_per_mtok: Annotated[float, Meta(ge=0)] | None = None
    output_per_mtok: Annotated[float, Meta(ge=0)] | None = None
    cache_read_per_mtok: Annotated[float, Meta(ge=0)] | None = None
    cache_write_per_mtok: Annotated[float, Meta(ge=0)] | None = None


class Provider(Section):
    """A model provider (R-MODEL-1, docs/agents.md): `scripted` (offline), `openai` (any OpenAI-compatible
    chat-completions server) or `anthropic` (the Messages API)."""

    kind: Literal["scripted", "openai", "anthropic"] = "scripted"
    base_url: str | None = None
    api_key: Secret | None = None
    # The name of an environment variable holding the key, read at each turn; `api_key` wins when both are set.
    api_key_env: str | None = None
    model: str | None = None
    # The longest wait for the connection and, once streaming, between two chunks.
    timeout_secs: Annotated[float, Meta(gt=0)] = 60.0
    # 429, 5xx and connection errors are retried this often, before the first streamed token only.
    max_retries: Annotated[int, Meta(ge=0, le=10)] = 2
    max_tokens: Annotated[int, Meta(ge=1)] | None = None
    temperature: Annotated[float, Meta(ge=0, le=2)] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    models_ttl_secs: Annotated[float, Meta(ge=0)] = 300.0
    pricing: Pricing = field(default_factory=Pricing)


class McpServer(Section):
    """[mcp.servers.<name>] (R-MCP-1): a stdio server (`command`) or a streamable HTTP one (`url`)."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, Secret] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, Secret] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)  # an allow-list; empty: every tool
    startup_timeout_secs: Annotated[float, Meta(gt=0)] = 10.0
    call_timeout_secs: Annotated[float, Meta(gt=0)] = 60.0

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise invalid_field("command", "an MCP server has either a command (stdio) or a url (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise invalid_field("url", "an MCP server's url must start with http:// or https://")


class Mcp(Section):
    """MCP servers whose tools agents may call (R-MCP): `[mcp.servers.<name>]`, chosen by `[agents.<a>] mcp_servers`."""

    servers: dict[str, McpServer] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not all(KEY_RE.match(k) and "__" not in k for k in self.servers):
            raise invalid_field("servers", "names must use only letters, digits, '_' or '-' (and no '__')")


class Agent(Section):
    provider: str = "scripted"
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] = field(default_factory=lambda: ["bash", "read_file", "write_file", "ask_user", "poll"])
    auto_approve: list[str] = field(default_factory=list)
    permissions: Permissions = field(default_factory=Permissions)
    workspace_dir: str | None = None
    max_turn_steps: Annotated[int, Meta(ge=1)] = 16
    mcp_servers: list[str] = field(default_factory=list)  # names under [mcp.servers] (R-MCP-1)


class PermissionProfile(Section):
    admin: bool = False
    grants: dict[str, list[str]] = field(default_factory=dict)
    config_write_paths: list[str] = field(default_factory=list)
    allowed_agents: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Imported here: app.auth imports app.config, which is half-initialized at module level.
        from app.auth.grants import normalize_grants_table, validate_path_pattern

        with field_named("grants"):
            self.grants = normalize_grants_table(self.grants)
        with field_named("config_write_paths"):
            self.config_write_paths = [validate_path_pattern(p) for p in self.config_write_paths]
        if any(a != "*" and not KEY_RE.match(a) for a in self.allowed_agents):
            raise invalid_field("allowed_agents", "agent must be '*' or an alias of letters, digits, '_' or '-'")


class User(Section):
    uid: int | None = None
    permission_profiles: list[str] = field(default_factory=list)
    principal_id: str | None = None

    def __post_init__(self) -> None:
        if self.uid is not None and self.uid < 0:
            raise invalid_field("uid", "uid must be >= 0")
        # "owner" is the daemon owner's id; a user taking it would own the owner's sessions.
        if self.principal_id is not None and (not self.principal_id.strip() or self.principal_id == OWNER_ID):
            raise invalid_field("principal_id", "principal_id must be non-empty and not a reserved id")


def _default_agents() -> dict[str, Agent]:
    return {"default": Agent()}


def _default_providers() -> dict[str, Provider]:
    return {"scripted": Provider(kind="scripted")}


class Config(Section):
    """The whole configuration. `agents.default` and `providers.scripted` always exist."""

    limits: Limits = field(default_factory=Limits)
    tools: Tools = field(default_factory=Tools)
    daemon: Daemon = field(default_factory=Daemon)
    context: Context = field(default_factory=Context)
    gateway: Gateway = field(default_factory=Gateway)
    wss: Wss = field(default_factory=Wss)
    storage: Storage = field(default_factory=Storage)
    compat: Compat = field(default_factory=Compat)
    permissions: Permissions = field(default_factory=Permissions)
    telemetry: Telemetry = field(default_factory=Telemetry)
    mcp: Mcp = field(default_factory=Mcp)
    agents: dict[str, Agent] = field(default_factory=_default_agents)
    providers: dict[str, Provider] = field(default_factory=_default_providers)
    permission_profiles: dict[str, PermissionProfile] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("agents", "providers", "permission_profiles", "users"):
            if not all(KEY_RE.match(k) for k in getattr(self, name)):
                raise invalid_field(name, "names must be non-empty and use only letters, digits, '_' or '-'")
        # One uid must resolve to one principal, and principal ids key session ownership.
        uids = [u.uid for u in self.users.values() if u.uid is not None]
        if len(uids) != len(set(uids)):
            raise invalid_field("users", "two users have the same uid")
        ids = [u.principal_id or f"user:{name}" for name, u in self.users.items()]
        if len(ids) != len(set(ids)):
            raise invalid_field("users", "two users have the same principal_id")
        self.agents.setdefault("default", Agent())
        self.providers.setdefault("scripted", Provider(kind="scripted"))


def dangling_references(config: Config) -> list[str]:
    """Names that point at no entry: a user's permission profile, an agent's provider. Valid on purpose (a user
    may be written before its profile, docs/config.md), but most often a typo, so the loader warns about them."""
    out: list[str] = []
    for name, user in config.users.items():
        for profile in user.permission_profiles:
            if profile not in config.permission_profiles:
                out.append(
                    f"users.{name}.permission_profiles: no profile {json.dumps(profile)}; "
                    "it grants nothing until it is added under [permission_profiles]"
                )
    for alias, agent in config.agents.items():
        if agent.provider not in config.providers:
            out.append(
                f"agents.{alias}.provider: no provider {json.dumps(agent.provider)}; "
                "its prompts fail until it is added under [providers]"
            )
        for name in agent.mcp_servers:
            if name not in config.mcp.servers:
                out.append(f"agents.{alias}.mcp_servers: no server {json.dumps(name)} under [mcp.servers]")
    return out


# -- validating and reading --------------------------------------------------------------------


def _decode(tp: Any, value: Any) -> Any:
    """msgspec's hook for the one type it does not know: a secret comes as a string."""
    if tp is Secret:
        if isinstance(value, str):
            return Secret(value)
        raise TypeError(f"Expected `str`, got `{type(value).__name__}`")  # app.validation reads it as string_type
    raise NotImplementedError


def convert(data: Any, tp: Any = None) -> Any:
    """`data` validated as `tp` (a `Config` by default), strictly (JSON types: `"5"` is not an int). Raises
    `msgspec.ValidationError` naming the first failing field; `app.config.props` turns it into field errors."""
    return msgspec.convert(data, Config if tp is None else tp, strict=True, dec_hook=_decode)


def to_data(value: Any) -> Any:
    """A config value as plain data (dicts, lists, scalars), secrets kept as `Secret` (masked by the reader)."""
    if isinstance(value, msgspec.Struct):
        return {name: to_data(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_data(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a section, as the schema readers (`props`, `sections`, docs tests) need it."""

    name: str
    annotation: Any  # the type, `Annotated` removed
    meta: tuple[Meta, ...]  # its bounds (`Meta(ge=1)`), if any
    default: Any  # msgspec.NODEFAULT when required
    default_factory: Any  # msgspec.NODEFAULT when none

    def default_value(self) -> Any:
        return self.default_factory() if self.default_factory is not msgspec.NODEFAULT else self.default

    @property
    def required(self) -> bool:
        return self.default is msgspec.NODEFAULT and self.default_factory is msgspec.NODEFAULT


@cache  # bounded by the schema
def fields_of(model: type[msgspec.Struct]) -> dict[str, FieldSpec]:
    """`model`'s fields in declaration order."""
    out: dict[str, FieldSpec] = {}
    for info in msgspec.structs.fields(model):
        tp, meta = info.type, tuple[Meta, ...]()
        if get_origin(tp) is Annotated:
            tp, *extras = get_args(tp)
            meta = tuple(m for m in extras if isinstance(m, Meta))
        out[info.name] = FieldSpec(info.name, tp, meta, info.default, info.default_factory)
    return out


def is_section(tp: Any) -> TypeGuard[type[msgspec.Struct]]:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)
