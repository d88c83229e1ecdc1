"""zerocode v0.8.4 wire frames and answer checkers (stdlib only).

Reference: zeroclaw-labs/zeroclaw at tag v0.8.4
(commit a56c345d51dd8ab562e9351e0d4ab83f6a741db9).  Every frame below is
copied from zerocode's source; comments cite ``path:line`` at that tag.
Paths are relative to the repository root (the client lives in
``apps/zerocode/src/``; there is no ``zc/`` sub-directory at v0.8.4).  A bare
file name abbreviates a path: ``client.rs``, ``jsonrpc.rs``, ``chat.rs``,
``app.rs``, ``main.rs``, ``wire.rs``, ``logs.rs``, ``config_manager.rs`` are
``apps/zerocode/src/<file>``; ``dispatch.rs``, ``rpc/types.rs`` are the
daemon's ``crates/zeroclaw-runtime/src/rpc/<file>``.  The research notes these
citations come from (zerocode-wire.md) were written alongside this module,
which is kept stdlib-only.

Two kinds of things live here:

* frame builders / literal frames -- exactly what zerocode writes on the
  socket (one JSON object per line, ``\\n``-terminated);
* ``check_*`` functions -- judge a daemon answer the way zerocode's Rust code
  parses it (serde derive rules or hand-written ``Value::get`` chains).  They
  raise ``AssertionError`` naming the missing / mistyped field, and return the
  parsed value on success.

Rust/serde typing rules mirrored here (see zerocode-wire.md section 0):

* ``String``          -> JSON string (``null`` rejected)
* ``Option<String>``  -> missing, ``null`` or string
* ``u64``/``usize``   -> JSON integer >= 0 (``1.0`` is a float and is rejected;
                         ``true`` is not an integer)
* ``bool``            -> JSON true/false
* ``#[serde(default)] T`` -> may be missing; if present it must have type T
                         (``null`` is rejected unless T is an Option)
* unknown fields are ignored everywhere (no ``deny_unknown_fields`` in
  apps/zerocode/src at v0.8.4).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable
from typing import Any

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

#: zerocode's own version; initialize.server_version must equal it exactly
#: (apps/zerocode/src/client.rs:487, env!("CARGO_PKG_VERSION") = workspace
#: version "0.8.4", Cargo.toml:6, apps/zerocode/Cargo.toml:3).
ZEROCODE_VERSION = "0.8.4"

#: apps/zerocode/src/jsonrpc.rs:121  pub const ACP_PROTOCOL_VERSION: u64 = 1;
ACP_PROTOCOL_VERSION = 1

#: apps/zerocode/src/jsonrpc.rs:27   pub const OUTBOUND_ID_PREFIX: &str = "zc-out-";
OUTBOUND_ID_PREFIX = "zc-out-"

#: apps/zerocode/src/jsonrpc.rs:26
JSONRPC_VERSION = "2.0"

#: Default RPC timeout for every `RpcClient::call` (client.rs:931-933), and
#: initialize timeout (client.rs:22).
CALL_TIMEOUT_SECS = 5
INITIALIZE_TIMEOUT_SECS = 10

#: Error codes zerocode knows (apps/zerocode/src/jsonrpc.rs:99-119).
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SESSION_NOT_FOUND = -32000

#: Methods whose failure aborts zerocode start-up (the `?` in
#: app.rs:341-402 build_panes!): see zerocode-wire.md section 2.
STARTUP_FATAL_METHODS = (
    "initialize",  # client.rs:690-704, main.rs:323-335
    "config/sections",  # config_manager.rs:414
    "config/templates",  # config_manager.rs:416
    "logs/subscribe",  # logs.rs:520
    # plus config/list {prefix: <first section key>} or config/map-keys
    # {path: <first section key>} when config/sections is non-empty
    # (config_manager.rs:419-420, 1729-1760, 1335-1336, 1429-1430).
)


# ---------------------------------------------------------------------------
# Envelope builders
# ---------------------------------------------------------------------------


class IdGen:
    """zerocode's outbound request ids: "zc-out-0", "zc-out-1", ...

    apps/zerocode/src/jsonrpc.rs:156 (next_id starts at 0), :197-198
    (``format!("{OUTBOUND_ID_PREFIX}{n}")``), :208 (sent as a JSON string).
    One counter per connection (a reconnect builds a new RpcOutbound,
    client.rs:621).
    """

    def __init__(self) -> None:
        self._n = itertools.count(0)

    def next(self) -> str:
        return f"{OUTBOUND_ID_PREFIX}{next(self._n)}"


def request(method: str, params: Any, id_: str) -> dict:
    """Request frame. Field order as serialized by serde:
    jsonrpc, method, params, id  (apps/zerocode/src/jsonrpc.rs:42-60)."""
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params, "id": id_}


def notification(method: str, params: Any) -> dict:
    """Notification frame: jsonrpc, method, params; no id
    (apps/zerocode/src/jsonrpc.rs:72-87, :185-190)."""
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}


def response_ok(id_: Any, result: Any) -> dict:
    """zerocode's answer to a daemon->client request: `error` omitted,
    `id` echoed verbatim (jsonrpc.rs:62-70, :168-183; client.rs:207-208)."""
    return {"jsonrpc": JSONRPC_VERSION, "result": result, "id": id_}


def response_err(id_: Any, code: int, message: str) -> dict:
    """`result` omitted (jsonrpc.rs:62-70)."""
    return {"jsonrpc": JSONRPC_VERSION, "error": {"code": code, "message": message}, "id": id_}


def encode(frame: dict) -> bytes:
    """NDJSON framing: one compact JSON object + '\\n'
    (client.rs:609-619 appends '\\n' when missing)."""
    return (json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------
# Params zerocode sends (builders + literal examples)
# ---------------------------------------------------------------------------


def initialize_params(
    env: dict | None = None, tui_id: str | None = None, tui_sig: str | None = None, transport: str = "local"
) -> dict:
    """`initialize` params (client.rs:665-689 local, :817-837 WSS).

    * protocol_version: integer 1 (client.rs:666, jsonrpc.rs:121)
    * clientCapabilities: {"elicitation": {"form": {}}}  (client.rs:673-675)
    * tui_id / tui_sig: ONLY on reconnect, when the previous initialize
      returned them (client.rs:677-682; app.rs:574-577).  First connect
      (main.rs:325) passes None for both -> keys absent.
    * env: the complete process environment as {String: String}, ALWAYS
      present on the local socket (even if empty -> {}), NEVER sent over WSS
      (client.rs:683-689 vs :831-837).
    """
    p: dict = {
        "protocol_version": ACP_PROTOCOL_VERSION,
        "clientCapabilities": {"elicitation": {"form": {}}},
    }
    if tui_id is not None:
        p["tui_id"] = tui_id
    if tui_sig is not None:
        p["tui_sig"] = tui_sig
    if transport == "local":
        p["env"] = dict(os.environ) if env is None else dict(env)
    return p


def session_new_chat_params(
    agent_alias: str, cwd: str | None, tui_id: str | None, session_id: str | None = None
) -> dict:
    """Chat pane `session/new` (client.rs:1425-1437 session_new_with_id;
    client.rs:1390-1396 session_new passes session_id=None).
    All four keys are ALWAYS present; absent values are JSON null.
    No `chat_mode` and no `exclude_memory` key (daemon default = chat,
    dispatch.rs:1016-1019)."""
    return {"agent_alias": agent_alias, "cwd": cwd, "session_id": session_id, "tui_id": tui_id}


def session_new_acp_params(
    agent_alias: str, cwd: str | None, tui_id: str | None, session_id: str | None = None
) -> dict:
    """Code (ACP) pane `session/new` (client.rs:1401-1420)."""
    return {
        "agent_alias": agent_alias,
        "cwd": cwd,
        "session_id": session_id,
        "tui_id": tui_id,
        "exclude_memory": True,
        "chat_mode": "acp",
    }


def session_prompt_params(session_id: str, prompt: str, attachments: list | None = None) -> dict:
    """`session/prompt` is sent as a NOTIFICATION (no id):
    chat.rs:854-866 (`rpc_arc.notify(method::SESSION_PROMPT, params)`).
    `attachments` key only when non-empty (chat.rs:861-863); local-socket
    entries are {"path","filename","mime_type","source":"file"|"clipboard"},
    WSS entries carry "data_b64" instead of "path" (attachment.rs:80-104)."""
    p = {"session_id": session_id, "prompt": prompt}
    if attachments:
        p["attachments"] = list(attachments)
    return p


def session_approve_params(session_id: str, request_id: str, decision: str, replacement: str | None = None) -> dict:
    """client.rs:1471-1486; decision strings client.rs:2799-2807:
    "allow_once" | "allow_always" | "reject" | "reject_with_edit".
    `replacement` (a string, the edited text) only with reject_with_edit
    (client.rs:1482-1484; produced by chat.rs:1565-1584 for file_edit /
    file_write tools only)."""
    assert decision in ("allow_once", "allow_always", "reject", "reject_with_edit"), decision
    p = {"session_id": session_id, "request_id": request_id, "decision": decision}
    if decision == "reject_with_edit":
        p["replacement"] = replacement if replacement is not None else ""
    return p


def session_messages_params(session_id: str, limit: int | None = None, before_index: int | None = None) -> dict:
    """client.rs:1617-1623 (plain) and 1630-1644 (paged: keys only when set)."""
    p: dict = {"session_id": session_id}
    if limit is not None:
        p["limit"] = limit
    if before_index is not None:
        p["before_index"] = before_index
    return p


def elicitation_accept_single(index: int) -> dict:
    """Result for a single-select elicitation: chat.rs:1184-1206 with
    content from chat.rs:4786-4788.  The key is the literal "choice" (NOT
    the schema's property name) and the value is "choice-<cursor>" where
    cursor is the 0-based row index in the displayed list."""
    return {"action": "accept", "content": {"choice": f"choice-{index}"}}


def elicitation_accept_multi(indices: Iterable[int]) -> dict:
    """Multi-select: chat.rs:4777-4785 -> {"choices": ["choice-<i>", ...]}
    in ascending row order."""
    return {"action": "accept", "content": {"choices": [f"choice-{i}" for i in sorted(indices)]}}


def elicitation_cancel() -> dict:
    """Esc, unparseable schema, or 2 s routing grace expired:
    chat.rs:689-699, 1211-1224, 665-687.  zerocode never sends "decline"."""
    return {"action": "cancel"}


def inbound_method_not_found(id_: Any, method: str) -> dict:
    """Any daemon->client request other than elicitation/create
    (chat.rs:617-635)."""
    return response_err(id_, METHOD_NOT_FOUND, f"Method not found: {method}")


#: Literal params, one per method zerocode calls (method -> params).
#: ``<...>`` are placeholders.
FRAMES: dict = {
    # client.rs:665-689 (first local connect; env abbreviated)
    "initialize": {
        "protocol_version": 1,
        "clientCapabilities": {"elicitation": {"form": {}}},
        "env": {"PATH": "/usr/bin:/bin", "HOME": "/home/u"},
    },
    # client.rs:677-682 + app.rs:574-577 (reconnect)
    "initialize#reconnect": {
        "protocol_version": 1,
        "clientCapabilities": {"elicitation": {"form": {}}},
        "tui_id": "tui_0a1b2c3d",
        "tui_sig": "<hex hmac>",
        "env": {"PATH": "/usr/bin:/bin"},
    },
    "cost/query": {"agent": None},  # client.rs:1520-1523 (dashboard.rs:252)
    "agents/status": {},  # client.rs:1567-1570
    "tui/list": {},  # client.rs:1659-1661
    "config/sections": {},  # client.rs:1067-1072
    "config/templates": {},  # client.rs:1128-1133
    "config/list": {"prefix": "<section key or dotted path>"},  # client.rs:1014-1019
    "config/map-keys": {"path": "<map path>"},  # client.rs:1074-1079
    "session/list-acp": {},  # client.rs:1562-1565
    "session/list": {"query": None},  # client.rs:1554-1557
    # client.rs:1425-1437
    "session/new#chat": {
        "agent_alias": "<alias>",
        "cwd": "/abs/launch/dir",
        "session_id": None,
        "tui_id": "tui_0a1b2c3d",
    },
    # client.rs:1401-1420
    "session/new#acp": {
        "agent_alias": "<alias>",
        "cwd": "/abs/launch/dir",
        "session_id": None,
        "tui_id": "tui_0a1b2c3d",
        "exclude_memory": True,
        "chat_mode": "acp",
    },
    # chat.rs:433-460, 1796
    "session/new#resume": {"agent_alias": "<alias>", "cwd": None, "session_id": "<old id>", "tui_id": "tui_0a1b2c3d"},
    "session/prompt": {"session_id": "<sid>", "prompt": "hello"},  # chat.rs:857-864 (notification!)
    "session/cancel": {"session_id": "<sid>"},  # client.rs:1439-1445
    "session/approve": {"session_id": "<sid>", "request_id": "<rid>", "decision": "allow_once"},  # client.rs:1471-1486
    # client.rs:1482-1484
    "session/approve#edit": {
        "session_id": "<sid>",
        "request_id": "<rid>",
        "decision": "reject_with_edit",
        "replacement": "<edited text>",
    },
    "session/close": {"session_id": "<sid>"},  # client.rs:1488-1494
    "session/messages": {"session_id": "<sid>"},  # client.rs:1617-1623
    "session/git_branch": {"session_id": "<sid>"},  # client.rs:1463-1469 (chat.rs:891-924, every 1 s)
    "logs/subscribe": {},  # client.rs:994-997
    # logs.rs:498 (SEV_DEBUG=5), 534-551, 20 (INITIAL_LOAD)
    "logs/query": {"severity_min": 5, "hide_internal": True, "limit": 200},
    "quickstart/state": {},  # client.rs:1239-1242 (quickstart_pane.rs:1155-1160)
    "status": {},  # client.rs:1508-1510 (app.rs:160-171, every 5 s)
    "health": {},  # client.rs:1512-1514
}


# ---------------------------------------------------------------------------
# serde-like field checkers
# ---------------------------------------------------------------------------

_MISSING = object()


def _fail(ctx: str, field: str, why: str) -> None:
    raise AssertionError(f"{ctx}: field `{field}` {why}")


def _obj(d: Any, ctx: str) -> dict:
    if not isinstance(d, dict):
        raise AssertionError(f"{ctx}: expected a JSON object, got {type(d).__name__}: {d!r:.200}")
    return d


def _is_u64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_i64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def req_str(d: dict, f: str, ctx: str) -> str:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        _fail(ctx, f, "is missing (required String)")
    if not isinstance(v, str):
        _fail(ctx, f, f"must be a string, got {v!r}")
    return v


def opt_str(d: dict, f: str, ctx: str) -> str | None:
    """Option<String> with or without #[serde(default)]: missing/null OK."""
    v = d.get(f)
    if v is None:
        return None
    if not isinstance(v, str):
        _fail(ctx, f, f"must be a string or null, got {v!r}")
    return v


def default_str(d: dict, f: str, ctx: str) -> str:
    """#[serde(default)] String: may be missing, null rejected."""
    v = d.get(f, _MISSING)
    if v is _MISSING:
        return ""
    if not isinstance(v, str):
        _fail(ctx, f, f"must be a string when present (null is rejected), got {v!r}")
    return v


def req_u64(d: dict, f: str, ctx: str) -> int:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        _fail(ctx, f, "is missing (required unsigned integer)")
    if not _is_u64(v):
        _fail(ctx, f, f"must be a non-negative JSON integer (not float/bool/null), got {v!r}")
    return v


def default_u64(d: dict, f: str, ctx: str) -> int:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        return 0
    if not _is_u64(v):
        _fail(ctx, f, f"must be a non-negative JSON integer when present, got {v!r}")
    return v


def opt_u64(d: dict, f: str, ctx: str) -> int | None:
    v = d.get(f)
    if v is None:
        return None
    if not _is_u64(v):
        _fail(ctx, f, f"must be a non-negative integer or null, got {v!r}")
    return v


def req_bool(d: dict, f: str, ctx: str) -> bool:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        _fail(ctx, f, "is missing (required bool)")
    if not isinstance(v, bool):
        _fail(ctx, f, f"must be true/false, got {v!r}")
    return v


def default_bool(d: dict, f: str, ctx: str) -> bool:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        return False
    if not isinstance(v, bool):
        _fail(ctx, f, f"must be true/false when present, got {v!r}")
    return v


def req_list(d: dict, f: str, ctx: str) -> list:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        _fail(ctx, f, "is missing (required array)")
    if not isinstance(v, list):
        _fail(ctx, f, f"must be an array, got {v!r:.200}")
    return v


def default_str_list(d: dict, f: str, ctx: str) -> list:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        _fail(ctx, f, f"must be an array of strings when present, got {v!r:.200}")
    return v


def enum_field(d: dict, f: str, ctx: str, allowed: Iterable[str], *, required: bool, nullable: bool) -> str | None:
    v = d.get(f, _MISSING)
    if v is _MISSING:
        if required:
            _fail(ctx, f, f"is missing (required enum {sorted(allowed)})")
        return None
    if v is None and nullable:
        return None
    if v not in allowed:
        _fail(ctx, f, f"must be one of {sorted(allowed)}, got {v!r}")
    return v


# ---------------------------------------------------------------------------
# Result checkers (one per method zerocode calls)
# ---------------------------------------------------------------------------


def check_initialize_result(d: Any, client_version: str = ZEROCODE_VERSION) -> dict:
    """client.rs:474-499 parse_initialize_response (hand-written, not serde).

    * server_version: read with `.get("server_version").and_then(as_str)`,
      missing/non-string -> "unknown"; then `server_version !=
      CARGO_PKG_VERSION` -> DaemonVersionMismatch -> zerocode exits
      (terminal error, main.rs:481-491, :327).  Exact string equality.
    * tui_id, tui_sig: optional strings (as_str; other types ignored).
    Nothing else is read (protocol_version, capabilities ignored).
    """
    ctx = "initialize result"
    d = _obj(d, ctx)
    sv = d.get("server_version")
    sv = sv if isinstance(sv, str) else "unknown"
    if sv != client_version:
        raise AssertionError(
            f"{ctx}: field `server_version` is {d.get('server_version')!r} (read as {sv!r}); "
            f"zerocode {client_version} exits with 'Version mismatch' unless it equals {client_version!r}"
        )
    tui_id = d.get("tui_id") if isinstance(d.get("tui_id"), str) else None
    tui_sig = d.get("tui_sig") if isinstance(d.get("tui_sig"), str) else None
    return {"server_version": sv, "tui_id": tui_id, "tui_sig": tui_sig}


def check_status_result(d: Any) -> dict:
    """client.rs:2812-2826 StatusResult (serde, snake_case)."""
    ctx = "status result"
    d = _obj(d, ctx)
    return {
        "server_version": req_str(d, "server_version", ctx),
        "protocol_version": req_u64(d, "protocol_version", ctx),
        "active_sessions": req_u64(d, "active_sessions", ctx),
        "config_dir": opt_str(d, "config_dir", ctx),
        "config_file": opt_str(d, "config_file", ctx),
        "config_kind": opt_str(d, "config_kind", ctx),
        "local_ipc_endpoint": opt_str(d, "local_ipc_endpoint", ctx),
    }


# zc:config_manager.rs:3354-3370: the Config pane sorts sections (stably) by this group rank; unknown -> Other.
GROUP_ORDER = (
    "Foundation",
    "Agent",
    "Multi-agent",
    "Tools",
    "Integrations",
    "Network",
    "Storage",
    "Operations",
    "Other",
)


def first_section(sections: list) -> dict:
    """The section zerocode's Config pane opens first (config_manager.rs:415), which it then lists."""
    rank = {group: i for i, group in enumerate(GROUP_ORDER)}
    return sorted(sections, key=lambda s: rank.get(s.get("group") or "Other", rank["Other"]))[0]


SECTION_SHAPES = ("direct_form", "one_tier_alias_map", "typed_family_map", "backend_picker")  # wire.rs:426-435


def check_config_sections_result(d: Any) -> list:
    """client.rs:1846-1869 ConfigSectionsResult / ConfigSectionEntry.
    STARTUP-FATAL (config_manager.rs:414)."""
    ctx = "config/sections result"
    d = _obj(d, ctx)
    out = []
    for i, e in enumerate(req_list(d, "sections", ctx)):
        c = f"{ctx}.sections[{i}]"
        e = _obj(e, c)
        out.append(
            {
                "key": req_str(e, "key", c),
                "label": req_str(e, "label", c),
                "help": req_str(e, "help", c),
                "completed": req_bool(e, "completed", c),
                "group": default_str(e, "group", c),
                "shape": enum_field(e, "shape", c, SECTION_SHAPES, required=False, nullable=True),
                "cost_category": default_str(e, "cost_category", c),
            }
        )
    return out


def check_config_templates_result(d: Any) -> list:
    """client.rs:1871-1875, 1904-1908: {"templates":[{"path": String}]}.
    STARTUP-FATAL (config_manager.rs:416)."""
    ctx = "config/templates result"
    d = _obj(d, ctx)
    out = []
    for i, e in enumerate(req_list(d, "templates", ctx)):
        c = f"{ctx}.templates[{i}]"
        out.append({"path": req_str(_obj(e, c), "path", c)})
    return out


PROP_KINDS = (
    "string",
    "bool",
    "integer",
    "float",
    "enum",
    "alias_ref",
    "string_array",
    "object_array",
    "object",
)  # wire.rs:283-295
CONFIG_TABS = (
    "None",
    "Connection",
    "Advanced",
    "Model",
    "Behavior",
    "General",
    "Channels",
    "Providers",
    "Bundles",
    "Cron",
    "Tuning",
    "Workspace",
    "Memory",
    "PeerGroups",
    "Personality",
    "Settings",
    "Servers",
    "Limits",
    "Costs",
    "Skills",
    "Aliases",
)  # wire.rs:337-361 (no rename_all!)
ALIAS_SOURCES = (
    "model_providers",
    "tts_providers",
    "transcription_providers",
    "channels",
    "risk_profiles",
    "runtime_profiles",
    "agents",
    "skill_bundles",
    "knowledge_bundles",
    "mcp_bundles",
)  # wire.rs:319-332


def check_config_list_result(d: Any) -> list:
    """client.rs:1709-1713 ConfigListResult {entries: Vec<ConfigFieldEntry>},
    entry = wire.rs:403-424.  Fatal at start-up only for the first section's
    prefix (config_manager.rs:1429-1430); tolerated for todotracker / model
    identity look-ups (chat.rs:424, 1884-1905)."""
    ctx = "config/list result"
    d = _obj(d, ctx)
    out = []
    for i, e in enumerate(req_list(d, "entries", ctx)):
        c = f"{ctx}.entries[{i}]"
        e = _obj(e, c)
        row = {
            "path": req_str(e, "path", c),
            "category": req_str(e, "category", c),
            "kind": enum_field(e, "kind", c, PROP_KINDS, required=True, nullable=False),
            "type_hint": req_str(e, "type_hint", c),
            "value": e.get("value"),
            "populated": req_bool(e, "populated", c),
            "is_secret": req_bool(e, "is_secret", c),
            "is_env_overridden": default_bool(e, "is_env_overridden", c),
            "enum_variants": default_str_list(e, "enum_variants", c),
            "description": req_str(e, "description", c),
            "section": opt_str(e, "section", c),
            "tab": enum_field(e, "tab", c, CONFIG_TABS, required=False, nullable=False) or "None",
            "alias_source": enum_field(e, "alias_source", c, ALIAS_SOURCES, required=False, nullable=True),
        }
        out.append(row)
    return out


def check_config_map_keys_result(d: Any) -> list:
    """client.rs:1826-1830 {"keys": [String]}."""
    ctx = "config/map-keys result"
    d = _obj(d, ctx)
    keys = req_list(d, "keys", ctx)
    for i, k in enumerate(keys):
        if not isinstance(k, str):
            _fail(ctx, f"keys[{i}]", f"must be a string, got {k!r}")
    return keys


def check_agents_status_result(d: Any) -> list:
    """client.rs:2898-2915.  On error the Chat/Code pane shows an error
    (chat.rs:248-261) -- not fatal; but with no *enabled* agent no session
    is ever created (chat.rs:264-267)."""
    ctx = "agents/status result"
    d = _obj(d, ctx)
    out = []
    for i, e in enumerate(req_list(d, "agents", ctx)):
        c = f"{ctx}.agents[{i}]"
        e = _obj(e, c)
        out.append(
            {
                "alias": req_str(e, "alias", c),
                "enabled": req_bool(e, "enabled", c),
                "live_sessions": default_u64(e, "live_sessions", c),
                "persisted_sessions": default_u64(e, "persisted_sessions", c),
                "channels": default_str_list(e, "channels", c),
            }
        )
    return out


def check_session_list_result(d: Any, method: str = "session/list") -> list:
    """client.rs:2876-2896 SessionListResult / SessionEntry (also used for
    session/list-acp, client.rs:1562-1565)."""
    ctx = f"{method} result"
    d = _obj(d, ctx)
    out = []
    for i, e in enumerate(req_list(d, "sessions", ctx)):
        c = f"{ctx}.sessions[{i}]"
        e = _obj(e, c)
        out.append(
            {
                "session_id": req_str(e, "session_id", c),
                "session_key": req_str(e, "session_key", c),
                "created_at": req_str(e, "created_at", c),
                "last_activity": req_str(e, "last_activity", c),
                "message_count": req_u64(e, "message_count", c),
                "agent_alias": opt_str(e, "agent_alias", c),
                "channel_id": opt_str(e, "channel_id", c),
                "name": opt_str(e, "name", c),
            }
        )
    return out


def check_session_new_result(d: Any) -> dict:
    """client.rs:2741-2747: session_id required String; workspace_dir
    Option<String> (#[serde(default)])."""
    ctx = "session/new result"
    d = _obj(d, ctx)
    return {"session_id": req_str(d, "session_id", ctx), "workspace_dir": opt_str(d, "workspace_dir", ctx)}


def check_session_messages_result(d: Any) -> dict:
    """client.rs:3092-3111: messages required [{role: String, content:
    String}]; total/start #[serde(default)] usize.  Roles rendered:
    "user", "assistant"; others ignored (chat.rs:6594-6613)."""
    ctx = "session/messages result"
    d = _obj(d, ctx)
    msgs = []
    for i, m in enumerate(req_list(d, "messages", ctx)):
        c = f"{ctx}.messages[{i}]"
        m = _obj(m, c)
        msgs.append({"role": req_str(m, "role", c), "content": req_str(m, "content", c)})
    return {"messages": msgs, "total": default_u64(d, "total", ctx), "start": default_u64(d, "start", ctx)}


def _check_empty_struct(d: Any, ctx: str) -> dict:
    """serde derive of `struct X {}` accepts any JSON object (extra keys
    ignored) or an array of length 0 -- NOT null / true / a string."""
    if isinstance(d, dict):
        return d
    if isinstance(d, list) and not d:
        return {}
    raise AssertionError(f"{ctx}: must be a JSON object (zerocode deserializes into an empty struct), got {d!r:.200}")


def check_session_cancel_result(d: Any) -> dict:
    """client.rs:2749-2751 SessionCancelResult {} -- any object.  On error
    zerocode ends the turn locally (chat.rs:1502-1507)."""
    return _check_empty_struct(d, "session/cancel result")


def check_session_approve_result(d: Any) -> dict:
    """client.rs:2787-2789 SessionApproveResult {} -- any object; the
    result/error is discarded anyway (`let _ =`, chat.rs:1531-1583)."""
    return _check_empty_struct(d, "session/approve result")


def check_session_close_result(d: Any) -> Any:
    """client.rs:1488-1494 returns serde_json::Value: anything but an
    error; errors are ignored by every caller (`let _ =`, chat.rs:538,561,1812)."""
    return d


def check_logs_subscribe_result(d: Any) -> Any:
    """client.rs:994-997 deserializes into Value: ANY JSON result is fine
    (even null); only an *error* response aborts start-up (logs.rs:520)."""
    return d


def check_logs_event_params(p: Any) -> dict:
    """`logs/event` notification params, read by logs.rs:90-123
    (LogEntry::from_value_with_fallback).  Entries failing this are dropped
    silently (logs.rs:642-646).
    Required: "@timestamp" (string), "severity_number" (u64, cast to u8),
    "event" (present; category/action optional strings).
    Optional: "id" (string, default = timestamp), "message" (string)."""
    ctx = "logs/event params"
    p = _obj(p, ctx)
    ts = req_str(p, "@timestamp", ctx)
    sev = req_u64(p, "severity_number", ctx)
    if "event" not in p:
        _fail(ctx, "event", "is missing (required; object with optional category/action)")
    ev = p["event"]
    cat = ev.get("category") if isinstance(ev, dict) and isinstance(ev.get("category"), str) else ""
    act = ev.get("action") if isinstance(ev, dict) and isinstance(ev.get("action"), str) else ""
    return {
        "id": p["id"] if isinstance(p.get("id"), str) else ts,
        "timestamp": ts,
        "severity_number": sev & 0xFF,
        "category": cat,
        "action": act,
        "message": p["message"] if isinstance(p.get("message"), str) else "",
    }


def check_logs_query_result(d: Any) -> dict:
    """client.rs:2712-2729 (errors tolerated, logs.rs:582-586)."""
    ctx = "logs/query result"
    d = _obj(d, ctx)
    events = req_list(d, "events", ctx)
    nc = d.get("next_cursor")
    if nc is not None and not (isinstance(nc, list) and len(nc) == 2 and all(isinstance(x, str) for x in nc)):
        _fail(ctx, "next_cursor", f"must be null or [String, String], got {nc!r}")
    return {
        "events": events,
        "next_cursor": nc,
        "next_cursor_line_offset": opt_u64(d, "next_cursor_line_offset", ctx),
        "at_end": req_bool(d, "at_end", ctx),
    }


RESULT_CHECKERS = {
    "initialize": check_initialize_result,
    "status": check_status_result,
    "config/sections": check_config_sections_result,
    "config/templates": check_config_templates_result,
    "config/list": check_config_list_result,
    "config/map-keys": check_config_map_keys_result,
    "agents/status": check_agents_status_result,
    "session/list": lambda d: check_session_list_result(d, "session/list"),
    "session/list-acp": lambda d: check_session_list_result(d, "session/list-acp"),
    "session/new": check_session_new_result,
    "session/messages": check_session_messages_result,
    "session/cancel": check_session_cancel_result,
    "session/approve": check_session_approve_result,
    "session/close": check_session_close_result,
    "logs/subscribe": check_logs_subscribe_result,
    "logs/query": check_logs_query_result,
}


# ---------------------------------------------------------------------------
# session/update
# ---------------------------------------------------------------------------

SESSION_UPDATE_TYPES = (
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_result",
    "approval_request",
    "context_usage",
    "history_trimmed",
    "turn_complete",
    "plan",
)  # client.rs:305-360
TURN_OUTCOMES = ("completed", "cancelled", "failed")  # client.rs:286-292
PLAN_STATUSES = ("pending", "in_progress", "completed")  # wire.rs:751-758
PLAN_PRIORITIES = ("high", "medium", "low")  # wire.rs:760-767


def parse_session_update(params: Any) -> dict | None:
    """Exact mirror of client.rs:302-362: returns None where zerocode
    silently drops the update (no error, no log)."""
    try:
        return check_session_update(params, strict=False)
    except AssertionError:
        return None


def check_session_update(params: Any, expected_type: str | None = None, strict: bool = True) -> dict:
    """Judge `session/update` params as client.rs:302-362 parses them.

    Raises AssertionError where zerocode would DROP the update.  With
    strict=True (default) it also rejects values zerocode accepts but
    silently misreads, i.e. what ZeroClaw 0.8.4 itself never sends:
      * approval_request.timeout_secs not a u64 (zerocode falls back to 30,
        client.rs:330);
      * turn_complete.outcome missing/unknown (zerocode assumes
        "completed", client.rs:294-300) or content missing/not a string
        (zerocode uses "", client.rs:345-350);
      * context_usage input_tokens / max_context_tokens present but not u64
        (zerocode treats as None, client.rs:332-336);
      * tool_result without `name` (zerocode does not read it; the daemon
        always sends it, rpc/types.rs:1334-1339).
    Returns a dict with the fields zerocode keeps.
    """
    ctx = "session/update params"
    p = _obj(params, ctx)
    t = p.get("type")
    if not isinstance(t, str):
        _fail(ctx, "type", f"must be a string, got {t!r}")
    ctx = f"session/update[{t}]"
    sid = req_str(p, "session_id", ctx)  # client.rs:304 -- `sessionId` is NOT read
    if expected_type is not None and t != expected_type:
        raise AssertionError(f"{ctx}: expected type {expected_type!r}, got {t!r}")
    out: dict = {"type": t, "session_id": sid}
    if t in ("agent_message_chunk", "agent_thought_chunk"):  # client.rs:306-313
        out["text"] = req_str(p, "text", ctx)
    elif t == "tool_call":  # client.rs:314-319
        out["tool_call_id"] = req_str(p, "tool_call_id", ctx)
        out["name"] = req_str(p, "name", ctx)
        if "raw_input" not in p:
            _fail(ctx, "raw_input", "is missing (any JSON value; null allowed)")
        out["raw_input"] = p["raw_input"]
    elif t == "tool_result":  # client.rs:320-324
        out["tool_call_id"] = req_str(p, "tool_call_id", ctx)
        out["raw_output"] = req_str(p, "raw_output", ctx)
        if strict:
            req_str(p, "name", ctx)
    elif t == "approval_request":  # client.rs:325-331
        out["request_id"] = req_str(p, "request_id", ctx)
        out["tool_name"] = req_str(p, "tool_name", ctx)
        out["arguments_summary"] = req_str(p, "arguments_summary", ctx)
        if "timeout_secs" not in p:
            _fail(ctx, "timeout_secs", "is missing (key required; update dropped)")
        ts = p["timeout_secs"]
        if _is_u64(ts):
            out["timeout_secs"] = ts
        elif strict:
            _fail(
                ctx, "timeout_secs", f"must be a non-negative JSON integer, got {ts!r} (zerocode would silently use 30)"
            )
        else:
            out["timeout_secs"] = 30
    elif t == "context_usage":  # client.rs:332-336
        for f in ("input_tokens", "max_context_tokens"):
            v = p.get(f)
            if v is not None and not _is_u64(v) and strict:
                _fail(ctx, f, f"must be a non-negative integer or absent, got {v!r}")
            out[f] = v if _is_u64(v) else None
    elif t == "history_trimmed":  # client.rs:337-342
        out["dropped_messages"] = req_u64(p, "dropped_messages", ctx)
        out["kept_turns"] = req_u64(p, "kept_turns", ctx)
        out["reason"] = req_str(p, "reason", ctx)
    elif t == "turn_complete":  # client.rs:343-351
        oc = p.get("outcome")
        if oc not in TURN_OUTCOMES:
            if strict:
                _fail(
                    ctx,
                    "outcome",
                    f"must be one of {TURN_OUTCOMES}, got {oc!r} (zerocode would treat it as 'completed')",
                )
            oc = "completed"
        out["outcome"] = oc
        c = p.get("content")
        if not isinstance(c, str):
            if strict:
                _fail(ctx, "content", f"must be a string, got {c!r} (zerocode would use '')")
            c = ""
        out["content"] = c
    elif t == "plan":  # client.rs:352-359
        entries = req_list(p, "entries", ctx)
        parsed = []
        for i, e in enumerate(entries):
            c = f"{ctx}.entries[{i}]"
            e = _obj(e, c)
            parsed.append(
                {
                    "content": req_str(e, "content", c),
                    "status": enum_field(e, "status", c, PLAN_STATUSES, required=False, nullable=False) or "pending",
                    "priority": enum_field(e, "priority", c, PLAN_PRIORITIES, required=False, nullable=False)
                    or "medium",
                    "activeForm": opt_str(e, "activeForm", c),
                }
            )
        out["entries"] = parsed
    else:
        raise AssertionError(f"{ctx}: unknown `type` {t!r}; zerocode drops it (client.rs:360)")
    return out


# ---------------------------------------------------------------------------
# elicitation/create (daemon -> zerocode request)
# ---------------------------------------------------------------------------


def _choice_options(items: list) -> list:
    """wire.rs:613-626: keep items whose `const` is a string; title defaults
    to the const."""
    out = []
    for it in items:
        if isinstance(it, dict) and isinstance(it.get("const"), str):
            title = it.get("title") if isinstance(it.get("title"), str) else it["const"]
            out.append({"const": it["const"], "title": title})
    return out


def check_elicitation_create_params(p: Any) -> dict:
    """Params as parsed by wire.rs:502-510 (serde) + wire.rs:559-596
    (ElicitationShape::from_schema).  AssertionError == zerocode would
    answer {"action":"cancel"} immediately (chat.rs:705-716).

    Returns {"session_id","message","kind":"single"|"multi","property",
             "choices":[{"const","title"}], "min_items","max_items"}.
    """
    ctx = "elicitation/create params"
    p = _obj(p, ctx)
    sid = req_str(p, "sessionId", ctx)  # camelCase! wire.rs:504-505
    enum_field(p, "mode", ctx, ("form", "url"), required=True, nullable=False)  # wire.rs:492-497
    msg = req_str(p, "message", ctx)
    if "requestedSchema" not in p:
        _fail(ctx, "requestedSchema", "is missing")
    schema = p["requestedSchema"]
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        _fail(ctx, "requestedSchema.properties", "must be a non-empty object")
    prop, ps = next(iter(props.items()))  # FIRST property only (wire.rs:561)
    ps = ps if isinstance(ps, dict) else {}
    if ps.get("type") == "array":  # wire.rs:564-583
        items = ps.get("items")
        any_of = items.get("anyOf") if isinstance(items, dict) else None
        if not isinstance(any_of, list):
            _fail(ctx, f"requestedSchema.properties.{prop}.items.anyOf", "must be an array")
        choices = _choice_options(any_of)
        mn = ps.get("minItems") if _is_u64(ps.get("minItems")) else 1
        mx = ps.get("maxItems") if _is_u64(ps.get("maxItems")) else len(choices)
        return {
            "session_id": sid,
            "message": msg,
            "kind": "multi",
            "property": prop,
            "choices": choices,
            "min_items": mn,
            "max_items": mx,
        }
    if ps.get("type") == "string":  # wire.rs:585-593
        one_of = ps.get("oneOf")
        if not isinstance(one_of, list):
            _fail(
                ctx,
                f"requestedSchema.properties.{prop}.oneOf",
                "must be an array (free-form string fields are not displayable)",
            )
        choices = _choice_options(one_of)
        if not choices:
            _fail(ctx, f"requestedSchema.properties.{prop}.oneOf", "has no {const,title} option")
        return {
            "session_id": sid,
            "message": msg,
            "kind": "single",
            "property": prop,
            "choices": choices,
            "min_items": 1,
            "max_items": 1,
        }
    _fail(
        ctx,
        f"requestedSchema.properties.{prop}.type",
        f"must be 'string' (with oneOf) or 'array' (with items.anyOf), got {ps.get('type')!r}",
    )
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------
# Frame routing (what zerocode does with each inbound line)
# ---------------------------------------------------------------------------


def classify_frame(line: str) -> tuple:
    """Mirror of client.rs:632-662 + route_inbound_frame client.rs:531-569.

    Returns (kind, frame) with kind in:
      "unparseable"  -- not JSON: skipped silently (client.rs:652-655)
      "request"      -- id non-null AND method string (client.rs:545-548)
      "response"     -- id present, no method (client.rs:551-561); only
                        STRING ids are dispatched, others dropped
      "notification" -- method, and id absent (client.rs:563-566)
      "ignored"      -- anything else, e.g. method + "id": null, or no
                        method and no id (client.rs:567)
    """
    try:
        f = json.loads(line.strip())
    except ValueError:
        return ("unparseable", None)
    if not isinstance(f, dict):
        return ("ignored", f)
    has_id = "id" in f
    method = f.get("method") if isinstance(f.get("method"), str) else None
    if has_id and method is not None and f["id"] is not None:
        return ("request", f)
    if has_id and method is None:
        return ("response", f) if isinstance(f["id"], str) else ("ignored", f)
    if not has_id and method is not None:
        return ("notification", f)
    return ("ignored", f)


def response_outcome(frame: dict) -> tuple:
    """How zerocode resolves a response (client.rs:555-559, jsonrpc.rs:235-254):
    `error` counts only if it deserializes as {code: i32, message: String,
    data?}; otherwise the call SUCCEEDS with `result` (or null when absent).
    Returns ("error", err) or ("ok", result)."""
    err = frame.get("error")
    if (
        isinstance(err, dict)
        and _is_i64(err.get("code"))
        and isinstance(err.get("message"), str)
        and -(2**31) <= err["code"] < 2**31
    ):
        return ("error", err)
    return ("ok", frame.get("result"))


def check_response_ok(frame: dict, method: str) -> Any:
    """Assert a response frame is a success and its result passes the
    method's checker (if we have one)."""
    kind, val = response_outcome(frame)
    if kind == "error":
        raise AssertionError(
            f"{method}: daemon answered error {val!r}"
            + (" -- zerocode start-up aborts" if method in STARTUP_FATAL_METHODS else "")
        )
    chk = RESULT_CHECKERS.get(method)
    return chk(val) if chk else val


__all__ = [
    n
    for n, v in list(globals().items())
    if not n.startswith("_")
    and not isinstance(v, type(json))
    and n not in ("annotations", "Any", "Iterable", "Optional")
]


if __name__ == "__main__":  # tiny self-test with ZeroClaw 0.8.4-shaped answers
    assert check_initialize_result(
        {"protocol_version": 1, "server_version": "0.8.4", "tui_id": "tui_0a1b2c3d", "capabilities": []}
    )["tui_id"]
    try:
        check_initialize_result({"serverVersion": "0.1.0"})
        raise SystemExit("expected mismatch")
    except AssertionError as e:
        assert "server_version" in str(e)
    check_session_update(
        {
            "type": "approval_request",
            "session_id": "s",
            "request_id": "r",
            "tool_name": "shell",
            "arguments_summary": "ls",
            "timeout_secs": 120,
        }
    )
    assert parse_session_update({"type": "turn_complete", "sessionId": "s"}) is None
    try:
        check_session_update(
            {
                "type": "approval_request",
                "session_id": "s",
                "request_id": "r",
                "tool_name": "shell",
                "arguments_summary": "ls",
                "timeout_secs": 8.0,
            }
        )
        raise SystemExit("expected float rejection")
    except AssertionError as e:
        assert "timeout_secs" in str(e)
    assert (
        parse_session_update(
            {
                "type": "approval_request",
                "session_id": "s",
                "request_id": "r",
                "tool_name": "shell",
                "arguments_summary": "ls",
                "timeout_secs": 8.0,
            }
        )["timeout_secs"]
        == 30
    )
    sh = check_elicitation_create_params(
        {
            "sessionId": "s",
            "mode": "form",
            "message": "Pick",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "choice": {
                        "type": "string",
                        "title": "Choice",
                        "oneOf": [{"const": "choice-0", "title": "A"}, {"const": "choice-1", "title": "B"}],
                    }
                },
                "required": ["choice"],
            },
        }
    )
    assert sh["kind"] == "single" and sh["choices"][1]["title"] == "B"
    assert elicitation_accept_single(1) == {"action": "accept", "content": {"choice": "choice-1"}}
    assert classify_frame('{"jsonrpc":"2.0","id":"zc-out-0","method":"elicitation/create"}')[0] == "request"
    assert classify_frame('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')[0] == "ignored"
    g = IdGen()
    assert (g.next(), g.next()) == ("zc-out-0", "zc-out-1")
    check_session_messages_result({"session_id": "s", "messages": [], "total": 0, "start": 0})
    check_session_list_result(
        {
            "sessions": [
                {
                    "session_id": "a",
                    "session_key": "rpc_a",
                    "created_at": "2026-01-01T00:00:00+00:00",
                    "last_activity": "2026-01-01T00:00:00+00:00",
                    "message_count": 2,
                    "agent_alias": "main",
                }
            ]
        }
    )
    print("zerocode_frames self-test OK")
