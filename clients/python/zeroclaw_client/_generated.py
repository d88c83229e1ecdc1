"""The zeroclaw client's types and methods, generated from the OpenRPC document by
`zeroclaw docs python-client`: do not edit (docs/protocol.md, "Clients")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast

from ._transport import Connection

__all__ = [
    "Agent",
    "AgentList",
    "AgentMessageChunkUpdate",
    "AgentRow",
    "AgentThoughtChunkUpdate",
    "AgentsStatusResult",
    "ApprovalRequestUpdate",
    "ApprovalResolvedUpdate",
    "Approved",
    "AttachEntry",
    "AttachFile",
    "Attached",
    "BashSettings",
    "BeginResult",
    "Cancelled",
    "ChunkReceived",
    "ClientInfo",
    "Closed",
    "Compat",
    "Config",
    "ConfigChangedUpdate",
    "ConfigDeleteResult",
    "ConfigDeleted",
    "ConfigEntries",
    "ConfigFieldEntry",
    "ConfigGetResult",
    "ConfigListResult",
    "ConfigMapKeys",
    "ConfigMapKeysResult",
    "ConfigProp",
    "ConfigSection",
    "ConfigSections",
    "ConfigSectionsResult",
    "ConfigSet",
    "ConfigSetMany",
    "ConfigSetManyResult",
    "ConfigSetResult",
    "ConfigTemplate",
    "ConfigTemplates",
    "ConfigTemplatesResult",
    "Context",
    "Daemon",
    "Deleted",
    "ElicitationAnswer",
    "ElicitationCreateParams",
    "ElicitationCreateResult",
    "ElicitationRequest",
    "FieldError",
    "FileAttachResult",
    "FileUploadBeginResult",
    "FileUploadChunkResult",
    "FileUploadCommitResult",
    "Forked",
    "Gateway",
    "GatewayInfo",
    "HistoryTrimmedUpdate",
    "InitializeResult",
    "Initialized",
    "Killed",
    "Limits",
    "LogEvent",
    "LogEventInfo",
    "LogSubscription",
    "LogsEventParams",
    "LogsSubscribeResult",
    "Mcp",
    "McpServer",
    "McpServerState",
    "McpStatus",
    "McpStatusResult",
    "MessageRow",
    "Messages",
    "ModelEntry",
    "ModelList",
    "ModelsListResult",
    "OpenRpcDocument",
    "PairedToken",
    "PairingCode",
    "PairingCodeResult",
    "PairingCreateResult",
    "PairingListResult",
    "PairingRevokeResult",
    "PermissionProfile",
    "Permissions",
    "PermissionsDeleteResult",
    "PermissionsListResult",
    "Pricing",
    "PrincipalInfo",
    "PromptResult",
    "Provider",
    "RolledBack",
    "RolledBackUpdate",
    "RpcDiscoverResult",
    "RuleDeleted",
    "RuleList",
    "SessionApproveParamsDecision",
    "SessionApproveResult",
    "SessionAttachResult",
    "SessionAttached",
    "SessionCancelResult",
    "SessionCloseResult",
    "SessionConfigureResult",
    "SessionConfigured",
    "SessionDeleteResult",
    "SessionDetachResult",
    "SessionDetached",
    "SessionForkResult",
    "SessionKillResult",
    "SessionList",
    "SessionListAcpResult",
    "SessionListResult",
    "SessionMessagesResult",
    "SessionNewParamsMode",
    "SessionNewResult",
    "SessionOpened",
    "SessionPromptResult",
    "SessionRollbackResult",
    "SessionRow",
    "SessionSteerResult",
    "SessionUpdateParams",
    "SessionUsage",
    "SessionUsageResult",
    "Status",
    "StatusResult",
    "Steered",
    "Storage",
    "StoredRuleRow",
    "SystemMetricsResult",
    "Telemetry",
    "TokenList",
    "TokenRevoked",
    "TokenRow",
    "ToolCallUpdate",
    "ToolEntry",
    "ToolList",
    "ToolProgressUpdate",
    "ToolResultUpdate",
    "Tools",
    "ToolsListResult",
    "TurnCompleteUpdate",
    "TurnEnd",
    "TurnUsage",
    "UsageSum",
    "UsageTotal",
    "UsageUpdate",
    "User",
    "UserMessageUpdate",
    "Wss",
    "ZeroclawClient",
]


class Agent(TypedDict):
    provider: NotRequired[str]
    model: NotRequired[str | None]
    system_prompt: NotRequired[str | None]
    tools: NotRequired[list[str]]
    auto_approve: NotRequired[list[str]]
    permissions: NotRequired[Permissions]
    workspace_dir: NotRequired[str | None]
    max_turn_steps: NotRequired[int]
    mcp_servers: NotRequired[list[str]]


class AgentList(TypedDict):
    agents: list[AgentRow]


class AgentMessageChunkUpdate(TypedDict):
    sessionId: str
    type: Literal["agent_message_chunk"]
    seq: int
    text: str


class AgentRow(TypedDict):
    """One configured agent, as the caller may use it."""
    alias: str
    enabled: bool
    liveSessions: int
    persistedSessions: int
    channels: list[str]


class AgentThoughtChunkUpdate(TypedDict):
    sessionId: str
    type: Literal["agent_thought_chunk"]
    seq: int
    text: str


class ApprovalRequestUpdate(TypedDict):
    sessionId: str
    type: Literal["approval_request"]
    seq: int
    requestId: str
    toolName: str
    arguments: dict[str, Any]
    timeoutSecs: float


class ApprovalResolvedUpdate(TypedDict):
    sessionId: str
    type: Literal["approval_resolved"]
    seq: int
    requestId: str
    decision: str


class Approved(TypedDict):
    sessionId: str
    requestId: str
    acknowledged: bool


class AttachEntry(TypedDict):
    ref_id: str
    marker: str
    workspace_path: str
    size_bytes: int
    deduplicated: bool


class AttachFile(TypedDict):
    data_b64: str
    filename: NotRequired[str | None]
    mime_type: NotRequired[str | None]


class Attached(TypedDict):
    files: list[AttachEntry]


class BashSettings(TypedDict):
    """The `bash` tool's sandbox (R-GUARD-4, docs/security.md)."""
    sandbox: NotRequired[Literal["auto", "bwrap", "off"]]
    sandbox_policy: NotRequired[Literal["read-only", "workspace-write", "workspace-write-net"]]
    max_processes: NotRequired[int]
    max_memory_bytes: NotRequired[int]
    max_file_bytes: NotRequired[int]
    max_cpu_secs: NotRequired[int]


class BeginResult(TypedDict):
    upload_id: str
    chunk_bytes: int
    max_bytes: int


class Cancelled(TypedDict):
    sessionId: str
    cancelled: Literal[True]


class ChunkReceived(TypedDict):
    upload_id: str
    received_bytes: int


class ClientInfo(TypedDict):
    name: NotRequired[str | None]
    version: NotRequired[str | None]


class Closed(TypedDict):
    sessionId: str
    closed: Literal[True]


class Compat(TypedDict):
    """Compatibility with other clients' expectations (docs/zerocode.md)."""
    zerocode_version: NotRequired[str]


class Config(TypedDict):
    """The whole configuration. `agents.default` and `providers.scripted` always exist."""
    limits: NotRequired[Limits]
    tools: NotRequired[Tools]
    daemon: NotRequired[Daemon]
    context: NotRequired[Context]
    gateway: NotRequired[Gateway]
    wss: NotRequired[Wss]
    storage: NotRequired[Storage]
    compat: NotRequired[Compat]
    permissions: NotRequired[Permissions]
    telemetry: NotRequired[Telemetry]
    mcp: NotRequired[Mcp]
    agents: NotRequired[dict[str, Agent]]
    providers: NotRequired[dict[str, Provider]]
    permission_profiles: NotRequired[dict[str, PermissionProfile]]
    users: NotRequired[dict[str, User]]


class ConfigChangedUpdate(TypedDict):
    sessionId: str
    type: Literal["config_changed"]
    seq: int
    agentAlias: str
    model: str | None
    temperature: float | None


class ConfigDeleted(TypedDict):
    prop: str
    deleted: Literal[True]


class ConfigEntries(TypedDict):
    entries: list[ConfigFieldEntry]


class ConfigFieldEntry(TypedDict):
    """One leaf of the config schema and its value."""
    path: str
    category: str
    kind: Literal["alias_ref", "bool", "enum", "float", "integer", "object", "object_array", "string", "string_array"]
    typeHint: str
    value: Any
    populated: bool
    isSecret: bool
    isEnvOverridden: bool
    enumVariants: list[str]
    description: str


class ConfigMapKeys(TypedDict):
    path: str
    keys: list[str]


class ConfigProp(TypedDict):
    """`config/get {prop}` (and `GET /api/config?prop=P`): the property's masked value (any JSON)."""
    prop: str
    value: Any


class ConfigSection(TypedDict):
    """One top-level config section, for a settings screen."""
    key: str
    label: str
    help: str
    hasPicker: bool
    completed: bool
    ready: bool
    group: str
    isQuickstart: bool
    costCategory: str


class ConfigSections(TypedDict):
    sections: list[ConfigSection]


class ConfigSet(TypedDict):
    prop: str
    set: Literal[True]


class ConfigSetMany(TypedDict):
    props: list[str]
    set: Literal[True]


class ConfigTemplate(TypedDict):
    """One map section of the config, for adding entries."""
    path: str
    kind: Literal["map"]
    valueType: str
    description: str


class ConfigTemplates(TypedDict):
    templates: list[ConfigTemplate]


class Context(TypedDict):
    max_messages: NotRequired[int]
    max_chars: NotRequired[int]


class Daemon(TypedDict):
    ephemeral_grace_secs: NotRequired[float]
    config_poll_secs: NotRequired[float]


class Deleted(TypedDict):
    sessionId: str
    deleted: Literal[True]


class ElicitationAnswer(TypedDict):
    action: Literal["accept", "cancel", "decline"]
    content: NotRequired[dict[str, Any]]


class ElicitationRequest(TypedDict):
    """A question a tool asks during a turn, as a form (MCP's elicitation)."""
    sessionId: str
    mode: Literal["form"]
    message: str
    requestedSchema: dict[str, Any]


class FieldError(TypedDict):
    field: str
    type: str
    message: NotRequired[str]


class Forked(TypedDict):
    """The new session (the caller's): `forkedAt` is the parent's index it was forked at, its row count."""
    sessionId: str
    parentId: str
    forkedAt: int
    messageCount: int


class Gateway(TypedDict):
    host: NotRequired[str]
    port: NotRequired[int]
    tls_cert: NotRequired[str | None]
    tls_key: NotRequired[str | None]
    allowed_hosts: NotRequired[list[str]]


class GatewayInfo(TypedDict):
    url: str


class HistoryTrimmedUpdate(TypedDict):
    sessionId: str
    type: Literal["history_trimmed"]
    seq: int
    droppedMessages: int
    keptMessages: int
    checkpoint: int


class Initialized(TypedDict):
    protocolVersion: int
    serverVersion: str
    serverPid: int
    principal: PrincipalInfo
    methods: list[str]


class Killed(TypedDict):
    sessionId: str
    killed: Literal[True]


class Limits(TypedDict):
    """Per-connection and daemon-wide limits (SPEC §5, R-LIM)."""
    max_frame_bytes: NotRequired[int]
    max_inflight_per_connection: NotRequired[int]
    max_outbound_buffer_bytes: NotRequired[int]
    outbound_stall_secs: NotRequired[float]
    max_connections: NotRequired[int]
    max_uploads_per_connection: NotRequired[int]
    upload_budget_bytes: NotRequired[int]
    upload_idle_secs: NotRequired[float]
    max_sessions: NotRequired[int]
    max_pending_client_requests: NotRequired[int]
    max_prompt_chars: NotRequired[int]
    replay_events: NotRequired[int]


LogEvent = TypedDict("LogEvent", {
    "id": "str",
    "@timestamp": "str",
    "severity_number": "Literal[9, 13, 17, 21]",
    "severity_text": 'Literal["CRITICAL", "ERROR", "INFO", "WARN"]',
    "event": "LogEventInfo",
    "service": 'Literal["zeroclaw"]',
    "message": "str",
    "schema_version": "Literal[2]",
})


class LogEventInfo(TypedDict):
    category: str
    action: Literal["log"]
    outcome: Literal["unknown"]


class LogSubscription(TypedDict):
    subscribed: bool


class Mcp(TypedDict):
    """MCP servers whose tools agents may call (R-MCP): `[mcp.servers.<name>]`, chosen by `[agents.<a>] mcp_servers`."""
    servers: NotRequired[dict[str, McpServer]]


class McpServer(TypedDict):
    """[mcp.servers.<name>] (R-MCP-1): a stdio server (`command`) or a streamable HTTP one (`url`)."""
    command: NotRequired[str | None]
    args: NotRequired[list[str]]
    env: NotRequired[dict[str, Literal["***"]]]
    cwd: NotRequired[str | None]
    url: NotRequired[str | None]
    headers: NotRequired[dict[str, Literal["***"]]]
    tools: NotRequired[list[str]]
    startup_timeout_secs: NotRequired[float]
    call_timeout_secs: NotRequired[float]


class McpServerState(TypedDict):
    """A server's state; `tools` its tool names while ready, `error` why it failed or last stopped."""
    name: str
    state: Literal["failed", "ready", "starting", "stopped"]
    tools: list[str]
    error: str | None


class McpStatus(TypedDict):
    servers: list[McpServerState]


class MessageRow(TypedDict):
    """One transcript row; the three optional keys are absent (never null) when they do not apply."""
    index: int
    role: str
    content: str
    toolCallId: NotRequired[str]
    name: NotRequired[str]
    marker: NotRequired[str]


class Messages(TypedDict):
    """A page of the visible transcript; `turnEnds` only when asked for (`turnEnds: true`)."""
    sessionId: str
    messages: list[MessageRow]
    total: int
    turnEnds: NotRequired[list[TurnEnd]]


class ModelEntry(TypedDict):
    """One model the provider serves; `displayName` and `contextWindow` only when the provider says."""
    id: str
    provider: str
    displayName: NotRequired[str]
    contextWindow: NotRequired[int]


class ModelList(TypedDict):
    """The agent's provider's models (the configured one always among them) and the agent's configured model;
    `error` says why the provider could not list them (then the configured model alone is listed)."""
    models: list[ModelEntry]
    current: str | None
    error: NotRequired[str]


class OpenRpcDocument(TypedDict):
    """An OpenRPC 1.3.2 document (this one); its meta-schema is https://meta.open-rpc.org/."""
    openrpc: Literal["1.3.2"]
    info: dict[str, Any]
    methods: list[dict[str, Any]]
    servers: NotRequired[list[dict[str, Any]]]
    components: NotRequired[dict[str, Any]]


class PairedToken(TypedDict):
    tokenId: str
    token: str
    user: str
    createdAt: str


class PairingCode(TypedDict):
    code: str
    user: str
    expiresInSecs: int


class PermissionProfile(TypedDict):
    admin: NotRequired[bool]
    grants: NotRequired[dict[str, list[str]]]
    config_write_paths: NotRequired[list[str]]
    allowed_agents: NotRequired[list[str]]


class Permissions(TypedDict):
    """Permission rules (R-GUARD-1): patterns such as `bash(git status*)`, `write_file(src/**)`, `mcp__github__*`.
    Deny wins over ask, ask over allow; a call no rule matches gets its tool's default (docs/security.md)."""
    allow: NotRequired[list[str]]
    ask: NotRequired[list[str]]
    deny: NotRequired[list[str]]


class Pricing(TypedDict):
    """What a provider's tokens cost, in USD per million tokens (R-MODEL-5); a price left out counts as unpriced."""
    input_per_mtok: NotRequired[float | None]
    output_per_mtok: NotRequired[float | None]
    cache_read_per_mtok: NotRequired[float | None]
    cache_write_per_mtok: NotRequired[float | None]


class PrincipalInfo(TypedDict):
    id: str
    admin: bool


class PromptResult(TypedDict):
    sessionId: str
    stopReason: Literal["cancelled", "end_turn", "failed", "max_turns"]
    content: str


class Provider(TypedDict):
    """A model provider (R-MODEL-1, docs/agents.md): `scripted` (offline), `openai` (any OpenAI-compatible
    chat-completions server) or `anthropic` (the Messages API)."""
    kind: NotRequired[Literal["anthropic", "openai", "scripted"]]
    base_url: NotRequired[str | None]
    api_key: NotRequired[Literal["***"] | None]
    api_key_env: NotRequired[str | None]
    model: NotRequired[str | None]
    timeout_secs: NotRequired[float]
    max_retries: NotRequired[int]
    max_tokens: NotRequired[int | None]
    temperature: NotRequired[float | None]
    headers: NotRequired[dict[str, str]]
    models_ttl_secs: NotRequired[float]
    pricing: NotRequired[Pricing]


class RolledBack(TypedDict):
    """The turns dropped, their first row's index, and the `marker:"rolled_back"` row's."""
    sessionId: str
    turns: int
    fromIndex: int
    markerIndex: int


class RolledBackUpdate(TypedDict):
    sessionId: str
    type: Literal["rolled_back"]
    seq: int
    turns: int
    fromIndex: int


class RuleDeleted(TypedDict):
    ruleId: str
    deleted: Literal[True]


class RuleList(TypedDict):
    rules: list[StoredRuleRow]


class SessionAttached(TypedDict):
    sessionId: str
    seq: int
    replayed: int
    gap: bool
    running: bool
    turnStartSeq: int | None
    pendingApprovals: list[str]


class SessionConfigured(TypedDict):
    """The session's effective settings, from its next provider step."""
    sessionId: str
    agentAlias: str
    model: str | None
    temperature: float | None


class SessionDetached(TypedDict):
    sessionId: str
    detached: bool


class SessionList(TypedDict):
    """One page, newest activity first (R-MULTI-4); `nextCursor` asks for the next one, null on the last."""
    sessions: list[SessionRow]
    nextCursor: str | None


class SessionOpened(TypedDict):
    """A session opened, attached to or resumed."""
    sessionId: str
    agentAlias: str
    mode: Literal["acp", "chat"]
    messageCount: int
    workspaceDir: str
    resumed: bool
    model: str | None
    temperature: float | None


class SessionRow(TypedDict):
    """One stored session."""
    sessionId: str
    agentAlias: str
    mode: Literal["acp", "chat"]
    live: bool
    killed: bool
    createdAt: str
    lastActivity: str
    messageCount: int
    title: str | None
    model: str | None
    temperature: float | None
    parentId: str | None
    forkedAt: int | None


class SessionUsage(TypedDict):
    """What a session's turns cost (R-MODEL-5): the total, and each turn in order."""
    sessionId: str
    total: UsageTotal
    turns: list[TurnUsage]


class Status(TypedDict):
    """`services.describe()` plus what the protocol layer knows, as the `status` method answers."""
    serverVersion: str
    pid: int
    endpoint: str
    gateway: GatewayInfo | None
    dataDir: str
    configFile: str
    uptimeSecs: float
    activeSessions: int
    sessionIds: list[str]
    sandbox: str
    protocolVersion: int
    connections: int


class Steered(TypedDict):
    """`accepted`: the text joined the running turn, as the user row `index`; false: the turn ended first (prompt)."""
    accepted: bool
    index: NotRequired[int]


class Storage(TypedDict):
    url: NotRequired[str | None]


class StoredRuleRow(TypedDict):
    ruleId: str
    principal: str
    agentAlias: str
    decision: str
    pattern: str
    createdAt: str


class Telemetry(TypedDict):
    """OpenTelemetry traces of turns (R-MODEL-6): on with the `zeroclaw[otel]` extra and an OTLP endpoint."""
    otlp_endpoint: NotRequired[str | None]
    service_name: NotRequired[str | None]


class TokenList(TypedDict):
    tokens: list[TokenRow]


class TokenRevoked(TypedDict):
    tokenId: str
    revoked: Literal[True]


class TokenRow(TypedDict):
    tokenId: str
    user: str
    label: str | None
    createdAt: str
    lastUsedAt: str | None


class ToolCallUpdate(TypedDict):
    sessionId: str
    type: Literal["tool_call"]
    seq: int
    toolCallId: str
    name: str
    rawInput: dict[str, Any]


class ToolEntry(TypedDict):
    """One tool as the model is offered it; `server` names the MCP server (null for a built-in)."""
    name: str
    description: str
    inputSchema: dict[str, Any]
    server: str | None


class ToolList(TypedDict):
    tools: list[ToolEntry]


class ToolProgressUpdate(TypedDict):
    sessionId: str
    type: Literal["tool_progress"]
    seq: int
    toolCallId: str
    progress: float
    total: float | None
    message: str | None


class ToolResultUpdate(TypedDict):
    sessionId: str
    type: Literal["tool_result"]
    seq: int
    toolCallId: str
    name: str
    rawOutput: str


class Tools(TypedDict):
    bash: NotRequired[BashSettings]
    ask_timeout_secs: NotRequired[float]
    approval_timeout_secs: NotRequired[float]
    bash_timeout_secs: NotRequired[float]
    output_limit_bytes: NotRequired[int]


class TurnCompleteUpdate(TypedDict):
    sessionId: str
    type: Literal["turn_complete"]
    seq: int
    stopReason: str
    content: str
    usage: UsageSum


class TurnEnd(TypedDict):
    index: int
    stopReason: str


class TurnUsage(TypedDict):
    """One counted turn: its provider steps summed, on the provider alias and model it ran on."""
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    costUsd: float | None
    index: int
    turnId: str
    provider: str
    model: str | None
    steps: int
    at: str


class UsageSum(TypedDict):
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    costUsd: float | None


class UsageTotal(TypedDict):
    """Tokens as the providers counted them; `costUsd` in USD from `[providers.<p>.pricing]`, null when unpriced."""
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    costUsd: float | None


class UsageUpdate(TypedDict):
    sessionId: str
    type: Literal["usage"]
    seq: int
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    costUsd: float | None


class User(TypedDict):
    uid: NotRequired[int | None]
    permission_profiles: NotRequired[list[str]]
    principal_id: NotRequired[str | None]


class UserMessageUpdate(TypedDict):
    sessionId: str
    type: Literal["user_message"]
    seq: int
    text: str
    index: int


class Wss(TypedDict):
    """zerocode's remote mode (R-SVC-4, docs/zerocode.md): off by default, TLS only, a paired token per peer."""
    enabled: NotRequired[bool]
    host: NotRequired[str]
    port: NotRequired[int]
    tls_cert: NotRequired[str | None]
    tls_key: NotRequired[str | None]

AgentsStatusResult: TypeAlias = "AgentList"

ConfigDeleteResult: TypeAlias = "ConfigDeleted"

ConfigGetResult: TypeAlias = "Config | ConfigProp"

ConfigListResult: TypeAlias = "ConfigEntries"

ConfigMapKeysResult: TypeAlias = "ConfigMapKeys"

ConfigSectionsResult: TypeAlias = "ConfigSections"

ConfigSetResult: TypeAlias = "ConfigSet"

ConfigSetManyResult: TypeAlias = "ConfigSetMany"

ConfigTemplatesResult: TypeAlias = "ConfigTemplates"

FileAttachResult: TypeAlias = "Attached"

FileUploadBeginResult: TypeAlias = "BeginResult"

FileUploadChunkResult: TypeAlias = "ChunkReceived"

FileUploadCommitResult: TypeAlias = "AttachEntry"

InitializeResult: TypeAlias = "Initialized"

LogsSubscribeResult: TypeAlias = "LogSubscription"

McpStatusResult: TypeAlias = "McpStatus"

ModelsListResult: TypeAlias = "ModelList"

PairingCodeResult: TypeAlias = "PairingCode"

PairingCreateResult: TypeAlias = "PairedToken"

PairingListResult: TypeAlias = "TokenList"

PairingRevokeResult: TypeAlias = "TokenRevoked"

PermissionsDeleteResult: TypeAlias = "RuleDeleted"

PermissionsListResult: TypeAlias = "RuleList"

RpcDiscoverResult: TypeAlias = "OpenRpcDocument"

SessionApproveResult: TypeAlias = "Approved"
SessionApproveParamsDecision: TypeAlias = 'Literal["allow_always", "allow_once", "reject", "reject_always"]'

SessionAttachResult: TypeAlias = "SessionAttached"

SessionCancelResult: TypeAlias = "Cancelled"

SessionCloseResult: TypeAlias = "Closed"

SessionConfigureResult: TypeAlias = "SessionConfigured"

SessionDeleteResult: TypeAlias = "Deleted"

SessionDetachResult: TypeAlias = "SessionDetached"

SessionForkResult: TypeAlias = "Forked"

SessionKillResult: TypeAlias = "Killed"

SessionListResult: TypeAlias = "SessionList"

SessionListAcpResult: TypeAlias = "SessionList"

SessionMessagesResult: TypeAlias = "Messages"

SessionNewResult: TypeAlias = "SessionOpened"
SessionNewParamsMode: TypeAlias = 'Literal["acp", "chat"]'

SessionPromptResult: TypeAlias = "PromptResult"

SessionRollbackResult: TypeAlias = "RolledBack"

SessionSteerResult: TypeAlias = "Steered"

SessionUsageResult: TypeAlias = "SessionUsage"

StatusResult: TypeAlias = "Status"

SystemMetricsResult: TypeAlias = "str"

ToolsListResult: TypeAlias = "ToolList"

SessionUpdateParams: TypeAlias = "AgentMessageChunkUpdate | AgentThoughtChunkUpdate | ToolCallUpdate | ToolResultUpdate | ApprovalRequestUpdate | ApprovalResolvedUpdate | TurnCompleteUpdate | HistoryTrimmedUpdate | ConfigChangedUpdate | UsageUpdate | ToolProgressUpdate | RolledBackUpdate | UserMessageUpdate"

LogsEventParams: TypeAlias = "LogEvent"

ElicitationCreateParams: TypeAlias = "ElicitationRequest"
ElicitationCreateResult: TypeAlias = "ElicitationAnswer"


class ZeroclawClient(Connection):
    """One method per RPC method; `on_…` registers a handler for what the daemon sends."""

    async def agents_status(self) -> AgentsStatusResult:
        """The configured agents, as the caller may use them"""
        return cast("AgentsStatusResult", await self._call("agents/status", {}, {}))

    async def config_delete(self, *, prop: str) -> ConfigDeleteResult:
        """Remove one config property (back to its default)"""
        return cast("ConfigDeleteResult", await self._call("config/delete", {"prop": prop}, {}))

    async def config_get(self, *, prop: str | None = None) -> ConfigGetResult:
        """The config with secrets masked, or one property's value"""
        return cast("ConfigGetResult", await self._call("config/get", {}, {"prop": prop}))

    async def config_list(self, *, prefix: str | None = None) -> ConfigListResult:
        """The config's leaves and their values (secrets masked)"""
        return cast("ConfigListResult", await self._call("config/list", {}, {"prefix": prefix}))

    async def config_map_keys(self, *, path: str) -> ConfigMapKeysResult:
        """The entry names of one map section of the config"""
        return cast("ConfigMapKeysResult", await self._call("config/map-keys", {"path": path}, {}))

    async def config_sections(self) -> ConfigSectionsResult:
        """The config's sections, for a settings screen"""
        return cast("ConfigSectionsResult", await self._call("config/sections", {}, {}))

    async def config_set(self, *, prop: str, value: Any) -> ConfigSetResult:
        """Set one config property (written to config.toml atomically)"""
        return cast("ConfigSetResult", await self._call("config/set", {"prop": prop, "value": value}, {}))

    async def config_set_many(self, *, sets: Any) -> ConfigSetManyResult:
        """Set several config properties in one commit"""
        return cast("ConfigSetManyResult", await self._call("config/set-many", {"sets": sets}, {}))

    async def config_templates(self) -> ConfigTemplatesResult:
        """The config's map sections, for adding an entry"""
        return cast("ConfigTemplatesResult", await self._call("config/templates", {}, {}))

    async def file_attach(self, *, session_id: str, files: list[AttachFile]) -> FileAttachResult:
        """Attach small files to a session in one call (base64)"""
        return cast("FileAttachResult", await self._call("file/attach", {"session_id": session_id, "files": files}, {}))

    async def file_upload_begin(self, *, session_id: str, size_bytes: int, filename: str | None = None, sha256: str | None = None, mime_type: str | None = None) -> FileUploadBeginResult:
        """Begin a chunked upload to a session"""
        return cast("FileUploadBeginResult", await self._call("file/upload/begin", {"session_id": session_id, "size_bytes": size_bytes}, {"filename": filename, "sha256": sha256, "mime_type": mime_type}))

    async def file_upload_chunk(self, *, upload_id: str, offset: int, data_b64: str) -> FileUploadChunkResult:
        """Send the next chunk of an upload"""
        return cast("FileUploadChunkResult", await self._call("file/upload/chunk", {"upload_id": upload_id, "offset": offset, "data_b64": data_b64}, {}))

    async def file_upload_commit(self, *, upload_id: str) -> FileUploadCommitResult:
        """Finish an upload: checked, stored, attached to its session"""
        return cast("FileUploadCommitResult", await self._call("file/upload/commit", {"upload_id": upload_id}, {}))

    async def initialize(self, *, protocol_version: int | None = None, client_info: ClientInfo | None = None, client_capabilities: dict[str, Any] | None = None, auth_token: str | None = None) -> InitializeResult:
        """Open the conversation: protocol version, credential, capabilities"""
        return cast("InitializeResult", await self._call("initialize", {}, {"protocolVersion": protocol_version, "clientInfo": client_info, "clientCapabilities": client_capabilities, "authToken": auth_token}))

    async def logs_subscribe(self) -> LogsSubscribeResult:
        """Receive the daemon's log records as logs/event"""
        return cast("LogsSubscribeResult", await self._call("logs/subscribe", {}, {}))

    async def mcp_status(self) -> McpStatusResult:
        """The MCP servers and their states"""
        return cast("McpStatusResult", await self._call("mcp/status", {}, {}))

    async def models_list(self, *, agent_alias: str | None = None) -> ModelsListResult:
        """The models an agent's provider serves, and its configured one"""
        return cast("ModelsListResult", await self._call("models/list", {}, {"agentAlias": agent_alias}))

    async def pairing_code(self, *, user: str, label: str | None = None) -> PairingCodeResult:
        """A one-time 6-digit code a browser trades for a token at POST /pair"""
        return cast("PairingCodeResult", await self._call("pairing/code", {"user": user}, {"label": label}))

    async def pairing_create(self, *, user: str, label: str | None = None) -> PairingCreateResult:
        """Pair a user: a new bearer token, shown once"""
        return cast("PairingCreateResult", await self._call("pairing/create", {"user": user}, {"label": label}))

    async def pairing_list(self) -> PairingListResult:
        """The active paired tokens (admin: everyone's)"""
        return cast("PairingListResult", await self._call("pairing/list", {}, {}))

    async def pairing_revoke(self, *, token_id: str) -> PairingRevokeResult:
        """Revoke a paired token"""
        return cast("PairingRevokeResult", await self._call("pairing/revoke", {"tokenId": token_id}, {}))

    async def permissions_delete(self, *, rule_id: str) -> PermissionsDeleteResult:
        """Delete a remembered permission rule"""
        return cast("PermissionsDeleteResult", await self._call("permissions/delete", {"ruleId": rule_id}, {}))

    async def permissions_list(self, *, agent_alias: str | None = None) -> PermissionsListResult:
        """The remembered permission rules (an admin's: everyone's)"""
        return cast("PermissionsListResult", await self._call("permissions/list", {}, {"agentAlias": agent_alias}))

    async def rpc_discover(self) -> RpcDiscoverResult:
        """This OpenRPC document (answered before initialize too)"""
        return cast("RpcDiscoverResult", await self._call("rpc.discover", {}, {}))

    async def session_approve(self, *, session_id: str, request_id: str, decision: Literal["allow_always", "allow_once", "reject", "reject_always"], remember: Literal["agent", "session"] | None = None, pattern: str | None = None) -> SessionApproveResult:
        """Answer a tool's approval_request"""
        return cast("SessionApproveResult", await self._call("session/approve", {"sessionId": session_id, "requestId": request_id, "decision": decision}, {"remember": remember, "pattern": pattern}))

    async def session_attach(self, *, session_id: str, after_seq: int | None = None) -> SessionAttachResult:
        """Follow a session: the retained updates after afterSeq, then every live one, whoever prompts"""
        return cast("SessionAttachResult", await self._call("session/attach", {"sessionId": session_id}, {"afterSeq": after_seq}))

    async def session_cancel(self, *, session_id: str) -> SessionCancelResult:
        """Cancel the running turn (a no-op when none runs)"""
        return cast("SessionCancelResult", await self._call("session/cancel", {"sessionId": session_id}, {}))

    async def session_close(self, *, session_id: str) -> SessionCloseResult:
        """Close a session: kept, resumable by session/new"""
        return cast("SessionCloseResult", await self._call("session/close", {"sessionId": session_id}, {}))

    async def session_configure(self, *, session_id: str, agent_alias: str | None = None, model: str | None = None, temperature: float | None = None) -> SessionConfigureResult:
        """Set a session's agent, model or temperature: stored, used from its next provider step, announced as config_changed"""
        return cast("SessionConfigureResult", await self._call("session/configure", {"sessionId": session_id}, {"agentAlias": agent_alias, "model": model, "temperature": temperature}))

    async def session_delete(self, *, session_id: str) -> SessionDeleteResult:
        """Delete a session and its transcript"""
        return cast("SessionDeleteResult", await self._call("session/delete", {"sessionId": session_id}, {}))

    async def session_detach(self, *, session_id: str) -> SessionDetachResult:
        """Stop following a session"""
        return cast("SessionDetachResult", await self._call("session/detach", {"sessionId": session_id}, {}))

    async def session_fork(self, *, session_id: str, at_index: int | None = None) -> SessionForkResult:
        """Fork a session at a prompt (or after its last finished turn) into a new session of the caller's"""
        return cast("SessionForkResult", await self._call("session/fork", {"sessionId": session_id}, {"atIndex": at_index}))

    async def session_kill(self, *, session_id: str) -> SessionKillResult:
        """Kill a session: stopped and no longer resumable"""
        return cast("SessionKillResult", await self._call("session/kill", {"sessionId": session_id}, {}))

    async def session_list(self, *, include_killed: bool | None = None, mode: Literal["acp", "chat"] | None = None, limit: int | None = None, cursor: str | None = None, query: str | None = None) -> SessionListResult:
        """The caller's sessions (an admin's: everyone's)"""
        return cast("SessionListResult", await self._call("session/list", {}, {"includeKilled": include_killed, "mode": mode, "limit": limit, "cursor": cursor, "query": query}))

    async def session_list_acp(self, *, include_killed: bool | None = None, mode: Literal["acp", "chat"] | None = None, limit: int | None = None, cursor: str | None = None, query: str | None = None) -> SessionListAcpResult:
        """The caller's ACP sessions"""
        return cast("SessionListAcpResult", await self._call("session/list-acp", {}, {"includeKilled": include_killed, "mode": mode, "limit": limit, "cursor": cursor, "query": query}))

    async def session_messages(self, *, session_id: str, limit: int | None = None, before: int | None = None, turn_ends: bool | None = None, include_rolled_back: bool | None = None) -> SessionMessagesResult:
        """A page of a session's visible transcript"""
        return cast("SessionMessagesResult", await self._call("session/messages", {"sessionId": session_id}, {"limit": limit, "before": before, "turnEnds": turn_ends, "includeRolledBack": include_rolled_back}))

    async def session_new(self, *, agent_alias: str | None = None, cwd: str | None = None, session_id: str | None = None, mode: Literal["acp", "chat"] | None = None, tui_id: str | None = None, mcp_servers: list[Any] | None = None) -> SessionNewResult:
        """Open a session, or resume one by its id; this connection then watches it"""
        return cast("SessionNewResult", await self._call("session/new", {}, {"agentAlias": agent_alias, "cwd": cwd, "sessionId": session_id, "mode": mode, "tuiId": tui_id, "mcpServers": mcp_servers}))

    async def session_prompt(self, *, session_id: str, prompt: str, attachments: list[dict[str, Any]] | None = None) -> SessionPromptResult:
        """Run one turn; its progress streams as session/update, and it answers when the turn ends"""
        return cast("SessionPromptResult", await self._call("session/prompt", {"sessionId": session_id, "prompt": prompt}, {"attachments": attachments}))

    async def session_rollback(self, *, session_id: str, turns: int) -> SessionRollbackResult:
        """Drop the last turns from what the model is given and session/messages shows (kept, marked), announced as rolled_back"""
        return cast("SessionRollbackResult", await self._call("session/rollback", {"sessionId": session_id, "turns": turns}, {}))

    async def session_steer(self, *, session_id: str, prompt: str) -> SessionSteerResult:
        """Add a user message to the running turn, given to the model at its next provider step and stored there; announced as user_message (no running turn: invalid params)"""
        return cast("SessionSteerResult", await self._call("session/steer", {"sessionId": session_id, "prompt": prompt}, {}))

    async def session_usage(self, *, session_id: str) -> SessionUsageResult:
        """What a session's turns cost: tokens and USD per turn, and the total"""
        return cast("SessionUsageResult", await self._call("session/usage", {"sessionId": session_id}, {}))

    async def status(self) -> StatusResult:
        """The daemon's status"""
        return cast("StatusResult", await self._call("status", {}, {}))

    async def system_metrics(self) -> SystemMetricsResult:
        """The daemon's metrics in the Prometheus text format 0.0.4"""
        return cast("SystemMetricsResult", await self._call("system/metrics", {}, {}))

    async def tools_list(self, *, session_id: str | None = None, agent_alias: str | None = None) -> ToolsListResult:
        """The tools a session or an agent is offered: built-in and from MCP servers (started if need be)"""
        return cast("ToolsListResult", await self._call("tools/list", {}, {"sessionId": session_id, "agentAlias": agent_alias}))

    def on_session_update(
        self, handler: Callable[["SessionUpdateParams"], Awaitable[None] | None]
    ) -> None:
        """A turn's progress on a session this connection watches (handlers run in arrival order; a coroutine as its own task)"""
        self._on_notification("session/update", handler)

    def on_logs_event(
        self, handler: Callable[["LogsEventParams"], Awaitable[None] | None]
    ) -> None:
        """One daemon log record, after logs/subscribe (handlers run in arrival order; a coroutine as its own task)"""
        self._on_notification("logs/event", handler)

    def on_elicitation_create(
        self, handler: Callable[["ElicitationCreateParams"], Awaitable["ElicitationCreateResult"]]
    ) -> None:
        """A tool asks the prompting client a question (only if it declared the elicitation capability) (one handler; without one the daemon is told -32601)"""
        self._on_request("elicitation/create", handler)
