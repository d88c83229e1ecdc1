// The zeroclaw daemon's JSON-RPC surface, generated from its OpenRPC document by
// `zeroclaw docs typescript`: do not edit (docs/protocol.md, "Clients").

export interface Agent {
  provider?: string;
  model?: string | null;
  system_prompt?: string | null;
  tools?: Array<string>;
  auto_approve?: Array<string>;
  permissions?: Permissions;
  workspace_dir?: string | null;
  max_turn_steps?: number;
  mcp_servers?: Array<string>;
}

export interface AgentList {
  agents: Array<AgentRow>;
}

export interface AgentMessageChunkUpdate {
  sessionId: string;
  type: "agent_message_chunk";
  seq: number;
  text: string;
}

/** One configured agent, as the caller may use it. */
export interface AgentRow {
  alias: string;
  enabled: boolean;
  liveSessions: number;
  persistedSessions: number;
  channels: Array<string>;
}

export interface AgentThoughtChunkUpdate {
  sessionId: string;
  type: "agent_thought_chunk";
  seq: number;
  text: string;
}

export interface ApprovalRequestUpdate {
  sessionId: string;
  type: "approval_request";
  seq: number;
  requestId: string;
  toolName: string;
  arguments: { [key: string]: unknown };
  timeoutSecs: number;
}

export interface ApprovalResolvedUpdate {
  sessionId: string;
  type: "approval_resolved";
  seq: number;
  requestId: string;
  decision: string;
}

export interface Approved {
  sessionId: string;
  requestId: string;
  acknowledged: boolean;
}

export interface AttachEntry {
  ref_id: string;
  marker: string;
  workspace_path: string;
  size_bytes: number;
  deduplicated: boolean;
}

export interface AttachFile {
  data_b64: string;
  filename?: string | null;
  mime_type?: string | null;
}

export interface Attached {
  files: Array<AttachEntry>;
}

/** The `bash` tool's sandbox (R-GUARD-4, docs/security.md). */
export interface BashSettings {
  sandbox?: "auto" | "bwrap" | "off";
  sandbox_policy?: "read-only" | "workspace-write" | "workspace-write-net";
  max_processes?: number;
  max_memory_bytes?: number;
  max_file_bytes?: number;
  max_cpu_secs?: number;
}

export interface BeginResult {
  upload_id: string;
  chunk_bytes: number;
  max_bytes: number;
}

export interface Cancelled {
  sessionId: string;
  cancelled: true;
}

export interface ChunkReceived {
  upload_id: string;
  received_bytes: number;
}

export interface ClientInfo {
  name?: string | null;
  version?: string | null;
}

export interface Closed {
  sessionId: string;
  closed: true;
}

/** Compatibility with other clients' expectations (docs/zerocode.md). */
export interface Compat {
  zerocode_version?: string;
}

/** The whole configuration. `agents.default` and `providers.scripted` always exist. */
export interface Config {
  limits?: Limits;
  tools?: Tools;
  daemon?: Daemon;
  context?: Context;
  gateway?: Gateway;
  wss?: Wss;
  storage?: Storage;
  compat?: Compat;
  permissions?: Permissions;
  telemetry?: Telemetry;
  mcp?: Mcp;
  agents?: { [key: string]: Agent };
  providers?: { [key: string]: Provider };
  permission_profiles?: { [key: string]: PermissionProfile };
  users?: { [key: string]: User };
}

export interface ConfigChangedUpdate {
  sessionId: string;
  type: "config_changed";
  seq: number;
  agentAlias: string;
  model: string | null;
  temperature: number | null;
}

export interface ConfigDeleted {
  prop: string;
  deleted: true;
}

export interface ConfigEntries {
  entries: Array<ConfigFieldEntry>;
}

/** One leaf of the config schema and its value. */
export interface ConfigFieldEntry {
  path: string;
  category: string;
  kind: "alias_ref" | "bool" | "enum" | "float" | "integer" | "object" | "object_array" | "string" | "string_array";
  typeHint: string;
  value: unknown;
  populated: boolean;
  isSecret: boolean;
  isEnvOverridden: boolean;
  enumVariants: Array<string>;
  description: string;
}

export interface ConfigMapKeys {
  path: string;
  keys: Array<string>;
}

/** `config/get {prop}` (and `GET /api/config?prop=P`): the property's masked value (any JSON). */
export interface ConfigProp {
  prop: string;
  value: unknown;
}

/** One top-level config section, for a settings screen. */
export interface ConfigSection {
  key: string;
  label: string;
  help: string;
  hasPicker: boolean;
  completed: boolean;
  ready: boolean;
  group: string;
  isQuickstart: boolean;
  costCategory: string;
}

export interface ConfigSections {
  sections: Array<ConfigSection>;
}

export interface ConfigSet {
  prop: string;
  set: true;
}

export interface ConfigSetMany {
  props: Array<string>;
  set: true;
}

/** One map section of the config, for adding entries. */
export interface ConfigTemplate {
  path: string;
  kind: "map";
  valueType: string;
  description: string;
}

export interface ConfigTemplates {
  templates: Array<ConfigTemplate>;
}

export interface Context {
  max_messages?: number;
  max_chars?: number;
}

export interface Daemon {
  ephemeral_grace_secs?: number;
  config_poll_secs?: number;
}

export interface Deleted {
  sessionId: string;
  deleted: true;
}

export interface ElicitationAnswer {
  action: "accept" | "cancel" | "decline";
  content?: { [key: string]: unknown };
}

/** A question a tool asks during a turn, as a form (MCP's elicitation). */
export interface ElicitationRequest {
  sessionId: string;
  mode: "form";
  message: string;
  requestedSchema: { [key: string]: unknown };
}

export interface FieldError {
  field: string;
  type: string;
  message?: string;
}

/** The new session (the caller's): `forkedAt` is the parent's index it was forked at, its row count. */
export interface Forked {
  sessionId: string;
  parentId: string;
  forkedAt: number;
  messageCount: number;
}

export interface Gateway {
  host?: string;
  port?: number;
  tls_cert?: string | null;
  tls_key?: string | null;
  allowed_hosts?: Array<string>;
}

export interface GatewayInfo {
  url: string;
}

export interface HistoryTrimmedUpdate {
  sessionId: string;
  type: "history_trimmed";
  seq: number;
  droppedMessages: number;
  keptMessages: number;
  checkpoint: number;
}

export interface Initialized {
  protocolVersion: number;
  serverVersion: string;
  serverPid: number;
  principal: PrincipalInfo;
  methods: Array<string>;
}

export interface Killed {
  sessionId: string;
  killed: true;
}

/** Per-connection and daemon-wide limits (SPEC §5, R-LIM). */
export interface Limits {
  max_frame_bytes?: number;
  max_inflight_per_connection?: number;
  max_outbound_buffer_bytes?: number;
  outbound_stall_secs?: number;
  max_connections?: number;
  max_uploads_per_connection?: number;
  upload_budget_bytes?: number;
  upload_idle_secs?: number;
  max_sessions?: number;
  max_pending_client_requests?: number;
  max_prompt_chars?: number;
  replay_events?: number;
}

/** One daemon log record (ZeroClaw's LogEvent, schema 2; docs/protocol.md). */
export interface LogEvent {
  id: string;
  "@timestamp": string;
  severity_number: 9 | 13 | 17 | 21;
  severity_text: "CRITICAL" | "ERROR" | "INFO" | "WARN";
  event: LogEventInfo;
  service: "zeroclaw";
  message: string;
  schema_version: 2;
}

export interface LogEventInfo {
  category: string;
  action: "log";
  outcome: "unknown";
}

export interface LogSubscription {
  subscribed: boolean;
}

/** MCP servers whose tools agents may call (R-MCP): `[mcp.servers.<name>]`, chosen by `[agents.<a>] mcp_servers`. */
export interface Mcp {
  servers?: { [key: string]: McpServer };
}

/** [mcp.servers.<name>] (R-MCP-1): a stdio server (`command`) or a streamable HTTP one (`url`). */
export interface McpServer {
  command?: string | null;
  args?: Array<string>;
  env?: { [key: string]: "***" };
  cwd?: string | null;
  url?: string | null;
  headers?: { [key: string]: "***" };
  tools?: Array<string>;
  startup_timeout_secs?: number;
  call_timeout_secs?: number;
}

/** A server's state; `tools` its tool names while ready, `error` why it failed or last stopped. */
export interface McpServerState {
  name: string;
  state: "failed" | "ready" | "starting" | "stopped";
  tools: Array<string>;
  error: string | null;
}

export interface McpStatus {
  servers: Array<McpServerState>;
}

/** One transcript row; the three optional keys are absent (never null) when they do not apply. */
export interface MessageRow {
  index: number;
  role: string;
  content: string;
  toolCallId?: string;
  name?: string;
  marker?: string;
}

/** A page of the visible transcript; `turnEnds` only when asked for (`turnEnds: true`). */
export interface Messages {
  sessionId: string;
  messages: Array<MessageRow>;
  total: number;
  turnEnds?: Array<TurnEnd>;
}

/** One model the provider serves; `displayName` and `contextWindow` only when the provider says. */
export interface ModelEntry {
  id: string;
  provider: string;
  displayName?: string;
  contextWindow?: number;
}

/** The agent's provider's models (the configured one always among them) and the agent's configured model; `error` says why the provider could not list them (then the configured model alone is listed). */
export interface ModelList {
  models: Array<ModelEntry>;
  current: string | null;
  error?: string;
}

/** An OpenRPC 1.3.2 document (this one); its meta-schema is https://meta.open-rpc.org/. */
export interface OpenRpcDocument {
  openrpc: "1.3.2";
  info: { [key: string]: unknown };
  methods: Array<{ [key: string]: unknown }>;
  servers?: Array<{ [key: string]: unknown }>;
  components?: { [key: string]: unknown };
}

export interface PairedToken {
  tokenId: string;
  token: string;
  user: string;
  createdAt: string;
}

export interface PairingCode {
  code: string;
  user: string;
  expiresInSecs: number;
}

export interface PermissionProfile {
  admin?: boolean;
  grants?: { [key: string]: Array<string> };
  config_write_paths?: Array<string>;
  allowed_agents?: Array<string>;
}

/** Permission rules (R-GUARD-1): patterns such as `bash(git status*)`, `write_file(src/**)`, `mcp__github__*`. Deny wins over ask, ask over allow; a call no rule matches gets its tool's default (docs/security.md). */
export interface Permissions {
  allow?: Array<string>;
  ask?: Array<string>;
  deny?: Array<string>;
}

/** What a provider's tokens cost, in USD per million tokens (R-MODEL-5); a price left out counts as unpriced. */
export interface Pricing {
  input_per_mtok?: number | null;
  output_per_mtok?: number | null;
  cache_read_per_mtok?: number | null;
  cache_write_per_mtok?: number | null;
}

export interface PrincipalInfo {
  id: string;
  admin: boolean;
}

export interface PromptResult {
  sessionId: string;
  stopReason: "cancelled" | "end_turn" | "failed" | "max_turns";
  content: string;
}

/** A model provider (R-MODEL-1, docs/agents.md): `scripted` (offline), `openai` (any OpenAI-compatible chat-completions server) or `anthropic` (the Messages API). */
export interface Provider {
  kind?: "anthropic" | "openai" | "scripted";
  base_url?: string | null;
  api_key?: "***" | null;
  api_key_env?: string | null;
  model?: string | null;
  timeout_secs?: number;
  max_retries?: number;
  max_tokens?: number | null;
  temperature?: number | null;
  headers?: { [key: string]: string };
  models_ttl_secs?: number;
  pricing?: Pricing;
}

/** The turns dropped, their first row's index, and the `marker:"rolled_back"` row's. */
export interface RolledBack {
  sessionId: string;
  turns: number;
  fromIndex: number;
  markerIndex: number;
}

export interface RolledBackUpdate {
  sessionId: string;
  type: "rolled_back";
  seq: number;
  turns: number;
  fromIndex: number;
}

export interface RuleDeleted {
  ruleId: string;
  deleted: true;
}

export interface RuleList {
  rules: Array<StoredRuleRow>;
}

export interface SessionAttached {
  sessionId: string;
  seq: number;
  replayed: number;
  gap: boolean;
  running: boolean;
  turnStartSeq: number | null;
  pendingApprovals: Array<string>;
}

/** The session's effective settings, from its next provider step. */
export interface SessionConfigured {
  sessionId: string;
  agentAlias: string;
  model: string | null;
  temperature: number | null;
}

export interface SessionDetached {
  sessionId: string;
  detached: boolean;
}

/** One page, newest activity first (R-MULTI-4); `nextCursor` asks for the next one, null on the last. */
export interface SessionList {
  sessions: Array<SessionRow>;
  nextCursor: string | null;
}

/** A session opened, attached to or resumed. */
export interface SessionOpened {
  sessionId: string;
  agentAlias: string;
  mode: "acp" | "chat";
  messageCount: number;
  workspaceDir: string;
  resumed: boolean;
  model: string | null;
  temperature: number | null;
}

/** One stored session. */
export interface SessionRow {
  sessionId: string;
  agentAlias: string;
  mode: "acp" | "chat";
  live: boolean;
  killed: boolean;
  createdAt: string;
  lastActivity: string;
  messageCount: number;
  title: string | null;
  model: string | null;
  temperature: number | null;
  parentId: string | null;
  forkedAt: number | null;
}

/** What a session's turns cost (R-MODEL-5): the total, and each turn in order. */
export interface SessionUsage {
  sessionId: string;
  total: UsageTotal;
  turns: Array<TurnUsage>;
}

/** `services.describe()` plus what the protocol layer knows, as the `status` method answers. */
export interface Status {
  serverVersion: string;
  pid: number;
  endpoint: string;
  gateway: GatewayInfo | null;
  dataDir: string;
  configFile: string;
  uptimeSecs: number;
  activeSessions: number;
  sessionIds: Array<string>;
  sandbox: string;
  protocolVersion: number;
  connections: number;
}

/** `accepted`: the text joined the running turn, as the user row `index`; false: the turn ended first (prompt). */
export interface Steered {
  accepted: boolean;
  index?: number;
}

export interface Storage {
  url?: string | null;
}

export interface StoredRuleRow {
  ruleId: string;
  principal: string;
  agentAlias: string;
  decision: string;
  pattern: string;
  createdAt: string;
}

/** OpenTelemetry traces of turns (R-MODEL-6): on with the `zeroclaw[otel]` extra and an OTLP endpoint. */
export interface Telemetry {
  otlp_endpoint?: string | null;
  service_name?: string | null;
}

export interface TokenList {
  tokens: Array<TokenRow>;
}

export interface TokenRevoked {
  tokenId: string;
  revoked: true;
}

export interface TokenRow {
  tokenId: string;
  user: string;
  label: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface ToolCallUpdate {
  sessionId: string;
  type: "tool_call";
  seq: number;
  toolCallId: string;
  name: string;
  rawInput: { [key: string]: unknown };
}

/** One tool as the model is offered it; `server` names the MCP server (null for a built-in). */
export interface ToolEntry {
  name: string;
  description: string;
  inputSchema: { [key: string]: unknown };
  server: string | null;
}

export interface ToolList {
  tools: Array<ToolEntry>;
}

export interface ToolProgressUpdate {
  sessionId: string;
  type: "tool_progress";
  seq: number;
  toolCallId: string;
  progress: number;
  total: number | null;
  message: string | null;
}

export interface ToolResultUpdate {
  sessionId: string;
  type: "tool_result";
  seq: number;
  toolCallId: string;
  name: string;
  rawOutput: string;
}

export interface Tools {
  bash?: BashSettings;
  ask_timeout_secs?: number;
  approval_timeout_secs?: number;
  bash_timeout_secs?: number;
  output_limit_bytes?: number;
}

export interface TurnCompleteUpdate {
  sessionId: string;
  type: "turn_complete";
  seq: number;
  stopReason: string;
  content: string;
  usage: UsageSum;
}

export interface TurnEnd {
  index: number;
  stopReason: string;
}

/** One counted turn: its provider steps summed, on the provider alias and model it ran on. */
export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
  index: number;
  turnId: string;
  provider: string;
  model: string | null;
  steps: number;
  at: string;
}

export interface UsageSum {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
}

/** Tokens as the providers counted them; `costUsd` in USD from `[providers.<p>.pricing]`, null when unpriced. */
export interface UsageTotal {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
}

export interface UsageUpdate {
  sessionId: string;
  type: "usage";
  seq: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
}

export interface User {
  uid?: number | null;
  permission_profiles?: Array<string>;
  principal_id?: string | null;
}

export interface UserMessageUpdate {
  sessionId: string;
  type: "user_message";
  seq: number;
  text: string;
  index: number;
}

/** zerocode's remote mode (R-SVC-4, docs/zerocode.md): off by default, TLS only, a paired token per peer. */
export interface Wss {
  enabled?: boolean;
  host?: string;
  port?: number;
  tls_cert?: string | null;
  tls_key?: string | null;
}

export interface AgentsStatusParams {
}
export type AgentsStatusResult = AgentList;

export interface ConfigDeleteParams {
  prop: string;
}
export type ConfigDeleteResult = ConfigDeleted;

export interface ConfigGetParams {
  prop?: string | null;
}
export type ConfigGetResult = Config | ConfigProp;

export interface ConfigListParams {
  prefix?: string | null;
}
export type ConfigListResult = ConfigEntries;

export interface ConfigMapKeysParams {
  path: string;
}
export type ConfigMapKeysResult = ConfigMapKeys;

export interface ConfigSectionsParams {
}
export type ConfigSectionsResult = ConfigSections;

export interface ConfigSetParams {
  prop: string;
  value: unknown;
}
export type ConfigSetResult = ConfigSet;

export interface ConfigSetManyParams {
  sets: unknown;
}
export type ConfigSetManyResult = ConfigSetMany;

export interface ConfigTemplatesParams {
}
export type ConfigTemplatesResult = ConfigTemplates;

export interface FileAttachParams {
  session_id: string;
  files: Array<AttachFile>;
}
export type FileAttachResult = Attached;

export interface FileUploadBeginParams {
  session_id: string;
  size_bytes: number;
  filename?: string | null;
  sha256?: string | null;
  mime_type?: string | null;
}
export type FileUploadBeginResult = BeginResult;

export interface FileUploadChunkParams {
  upload_id: string;
  offset: number;
  data_b64: string;
}
export type FileUploadChunkResult = ChunkReceived;

export interface FileUploadCommitParams {
  upload_id: string;
}
export type FileUploadCommitResult = AttachEntry;

export interface InitializeParams {
  protocolVersion?: number;
  clientInfo?: ClientInfo | null;
  clientCapabilities?: { [key: string]: unknown } | null;
  authToken?: string | null;
}
export type InitializeResult = Initialized;

export interface LogsSubscribeParams {
}
export type LogsSubscribeResult = LogSubscription;

export interface McpStatusParams {
}
export type McpStatusResult = McpStatus;

export interface ModelsListParams {
  agentAlias?: string;
}
export type ModelsListResult = ModelList;

export interface PairingCodeParams {
  user: string;
  label?: string | null;
}
export type PairingCodeResult = PairingCode;

export interface PairingCreateParams {
  user: string;
  label?: string | null;
}
export type PairingCreateResult = PairedToken;

export interface PairingListParams {
}
export type PairingListResult = TokenList;

export interface PairingRevokeParams {
  tokenId: string;
}
export type PairingRevokeResult = TokenRevoked;

export interface PermissionsDeleteParams {
  ruleId: string;
}
export type PermissionsDeleteResult = RuleDeleted;

export interface PermissionsListParams {
  agentAlias?: string | null;
}
export type PermissionsListResult = RuleList;

export interface RpcDiscoverParams {
}
export type RpcDiscoverResult = OpenRpcDocument;

export interface SessionApproveParams {
  sessionId: string;
  requestId: string;
  decision: "allow_always" | "allow_once" | "reject" | "reject_always";
  remember?: "agent" | "session" | null;
  pattern?: string | null;
}
export type SessionApproveResult = Approved;

export interface SessionAttachParams {
  sessionId: string;
  afterSeq?: number | null;
}
export type SessionAttachResult = SessionAttached;

export interface SessionCancelParams {
  sessionId: string;
}
export type SessionCancelResult = Cancelled;

export interface SessionCloseParams {
  sessionId: string;
}
export type SessionCloseResult = Closed;

export interface SessionConfigureParams {
  sessionId: string;
  agentAlias?: string;
  model?: string | null;
  temperature?: number | null;
}
export type SessionConfigureResult = SessionConfigured;

export interface SessionDeleteParams {
  sessionId: string;
}
export type SessionDeleteResult = Deleted;

export interface SessionDetachParams {
  sessionId: string;
}
export type SessionDetachResult = SessionDetached;

export interface SessionForkParams {
  sessionId: string;
  atIndex?: number | null;
}
export type SessionForkResult = Forked;

export interface SessionKillParams {
  sessionId: string;
}
export type SessionKillResult = Killed;

export interface SessionListParams {
  includeKilled?: boolean;
  mode?: "acp" | "chat" | null;
  limit?: number;
  cursor?: string | null;
  query?: string | null;
}
export type SessionListResult = SessionList;

export interface SessionListAcpParams {
  includeKilled?: boolean;
  mode?: "acp" | "chat" | null;
  limit?: number;
  cursor?: string | null;
  query?: string | null;
}
export type SessionListAcpResult = SessionList;

export interface SessionMessagesParams {
  sessionId: string;
  limit?: number;
  before?: number | null;
  turnEnds?: boolean;
  includeRolledBack?: boolean;
}
export type SessionMessagesResult = Messages;

export interface SessionNewParams {
  agentAlias?: string;
  cwd?: string | null;
  sessionId?: string | null;
  mode?: "acp" | "chat";
  tuiId?: string | null;
  mcpServers?: Array<unknown> | null;
}
export type SessionNewResult = SessionOpened;

export interface SessionPromptParams {
  sessionId: string;
  prompt: string;
  attachments?: Array<{ [key: string]: unknown }> | null;
}
export type SessionPromptResult = PromptResult;

export interface SessionRollbackParams {
  sessionId: string;
  turns: number;
}
export type SessionRollbackResult = RolledBack;

export interface SessionSteerParams {
  sessionId: string;
  prompt: string;
}
export type SessionSteerResult = Steered;

export interface SessionUsageParams {
  sessionId: string;
}
export type SessionUsageResult = SessionUsage;

export interface StatusParams {
}
export type StatusResult = Status;

export interface SystemMetricsParams {
}
export type SystemMetricsResult = string;

export interface ToolsListParams {
  sessionId?: string;
  agentAlias?: string;
}
export type ToolsListResult = ToolList;

export type SessionUpdateParams = AgentMessageChunkUpdate | AgentThoughtChunkUpdate | ToolCallUpdate | ToolResultUpdate | ApprovalRequestUpdate | ApprovalResolvedUpdate | TurnCompleteUpdate | HistoryTrimmedUpdate | ConfigChangedUpdate | UsageUpdate | ToolProgressUpdate | RolledBackUpdate | UserMessageUpdate;

export type LogsEventParams = LogEvent;

export type ElicitationCreateParams = ElicitationRequest;
export type ElicitationCreateResult = ElicitationAnswer;

/** Every method the daemon answers: its params (by name) and its result. */
export interface ZeroclawMethods {
  "agents/status": { params: AgentsStatusParams; result: AgentsStatusResult };
  "config/delete": { params: ConfigDeleteParams; result: ConfigDeleteResult };
  "config/get": { params: ConfigGetParams; result: ConfigGetResult };
  "config/list": { params: ConfigListParams; result: ConfigListResult };
  "config/map-keys": { params: ConfigMapKeysParams; result: ConfigMapKeysResult };
  "config/sections": { params: ConfigSectionsParams; result: ConfigSectionsResult };
  "config/set": { params: ConfigSetParams; result: ConfigSetResult };
  "config/set-many": { params: ConfigSetManyParams; result: ConfigSetManyResult };
  "config/templates": { params: ConfigTemplatesParams; result: ConfigTemplatesResult };
  "file/attach": { params: FileAttachParams; result: FileAttachResult };
  "file/upload/begin": { params: FileUploadBeginParams; result: FileUploadBeginResult };
  "file/upload/chunk": { params: FileUploadChunkParams; result: FileUploadChunkResult };
  "file/upload/commit": { params: FileUploadCommitParams; result: FileUploadCommitResult };
  "initialize": { params: InitializeParams; result: InitializeResult };
  "logs/subscribe": { params: LogsSubscribeParams; result: LogsSubscribeResult };
  "mcp/status": { params: McpStatusParams; result: McpStatusResult };
  "models/list": { params: ModelsListParams; result: ModelsListResult };
  "pairing/code": { params: PairingCodeParams; result: PairingCodeResult };
  "pairing/create": { params: PairingCreateParams; result: PairingCreateResult };
  "pairing/list": { params: PairingListParams; result: PairingListResult };
  "pairing/revoke": { params: PairingRevokeParams; result: PairingRevokeResult };
  "permissions/delete": { params: PermissionsDeleteParams; result: PermissionsDeleteResult };
  "permissions/list": { params: PermissionsListParams; result: PermissionsListResult };
  "rpc.discover": { params: RpcDiscoverParams; result: RpcDiscoverResult };
  "session/approve": { params: SessionApproveParams; result: SessionApproveResult };
  "session/attach": { params: SessionAttachParams; result: SessionAttachResult };
  "session/cancel": { params: SessionCancelParams; result: SessionCancelResult };
  "session/close": { params: SessionCloseParams; result: SessionCloseResult };
  "session/configure": { params: SessionConfigureParams; result: SessionConfigureResult };
  "session/delete": { params: SessionDeleteParams; result: SessionDeleteResult };
  "session/detach": { params: SessionDetachParams; result: SessionDetachResult };
  "session/fork": { params: SessionForkParams; result: SessionForkResult };
  "session/kill": { params: SessionKillParams; result: SessionKillResult };
  "session/list": { params: SessionListParams; result: SessionListResult };
  "session/list-acp": { params: SessionListAcpParams; result: SessionListAcpResult };
  "session/messages": { params: SessionMessagesParams; result: SessionMessagesResult };
  "session/new": { params: SessionNewParams; result: SessionNewResult };
  "session/prompt": { params: SessionPromptParams; result: SessionPromptResult };
  "session/rollback": { params: SessionRollbackParams; result: SessionRollbackResult };
  "session/steer": { params: SessionSteerParams; result: SessionSteerResult };
  "session/usage": { params: SessionUsageParams; result: SessionUsageResult };
  "status": { params: StatusParams; result: StatusResult };
  "system/metrics": { params: SystemMetricsParams; result: SystemMetricsResult };
  "tools/list": { params: ToolsListParams; result: ToolsListResult };
}

/** The arguments of a call after the method's name: its params, optional when the method requires none. */
export type ZeroclawCallArgs<M extends keyof ZeroclawMethods> = {} extends ZeroclawMethods[M]["params"]
  ? [params?: ZeroclawMethods[M]["params"]]
  : [params: ZeroclawMethods[M]["params"]];

/** The notifications the daemon sends: their params. */
export interface ZeroclawNotifications {
  "session/update": SessionUpdateParams;
  "logs/event": LogsEventParams;
}

/** The requests the daemon makes: their params and the answer's result. */
export interface ZeroclawServerRequests {
  "elicitation/create": { params: ElicitationCreateParams; result: ElicitationCreateResult };
}
