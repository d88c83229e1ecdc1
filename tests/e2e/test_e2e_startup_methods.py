"""The methods zerocode calls on start (R-ZC-4), against a real daemon: `config/sections` (and the `config/list` of
its first section after zerocode's group sort), `config/templates`, `config/map-keys`, `agents/status`,
`logs/subscribe` and then `logs/event`. The zerocode dialect's answers are judged the way zerocode v0.8.4 reads them
(the checkers below are copied from the research's `zerocode_frames.py`, which cites apps/zerocode/src at tag
v0.8.4); the standard dialect's carry the same fields in camelCase.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from e2e_harness import Client, DaemonFactory

pytestmark = pytest.mark.req("R-ZC-4")

CONFIG = """\
[limits]
max_sessions = 8

[providers.oa]
kind = "openai"
api_key = "sk-e2e-never-shown"

[agents.coder]
provider = "oa"
"""
# apps/zerocode/src/client.rs:665-689 (first local connect)
ZEROCODE_INIT = {"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}, "env": {"HOME": "/h"}}
# apps/zerocode/src/config_manager.rs:3354-3370
GROUP_RANK = (
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
PROP_KINDS = ("string", "bool", "integer", "float", "enum", "alias_ref", "string_array", "object_array", "object")
SECTION_SHAPES = ("direct_form", "one_tier_alias_map", "typed_family_map", "backend_picker")

# -- zerocode's reading (zerocode_frames.py: serde rules of apps/zerocode/src/client.rs) ---------------------------


def _obj(d: Any, ctx: str) -> dict[str, Any]:
    assert isinstance(d, dict), f"{ctx}: expected an object, got {d!r:.200}"
    return d


def _u64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def req_str(d: dict[str, Any], f: str, ctx: str) -> str:
    assert isinstance(d.get(f), str), f"{ctx}: `{f}` must be a string, got {d.get(f)!r}"
    return str(d[f])


def req_bool(d: dict[str, Any], f: str, ctx: str) -> bool:
    assert isinstance(d.get(f), bool), f"{ctx}: `{f}` must be a bool, got {d.get(f)!r}"
    return bool(d[f])


def default_str(d: dict[str, Any], f: str, ctx: str) -> str:
    assert f not in d or isinstance(d[f], str), f"{ctx}: `{f}` must be a string when present"
    return str(d.get(f, ""))


def default_u64(d: dict[str, Any], f: str, ctx: str) -> int:
    assert f not in d or _u64(d[f]), f"{ctx}: `{f}` must be a non-negative integer when present, got {d[f]!r}"
    return int(d.get(f, 0))


def default_str_list(d: dict[str, Any], f: str, ctx: str) -> list[str]:
    v = d.get(f, [])
    assert isinstance(v, list) and all(isinstance(x, str) for x in v), f"{ctx}: `{f}` must be strings"
    return v


def req_list(d: dict[str, Any], f: str, ctx: str) -> list[Any]:
    assert isinstance(d.get(f), list), f"{ctx}: `{f}` must be an array"
    return list(d[f])


def check_config_sections_result(d: Any) -> list[dict[str, Any]]:
    """client.rs:1846-1869; start-up fatal (config_manager.rs:414)."""
    ctx = "config/sections result"
    out = []
    for i, e in enumerate(req_list(_obj(d, ctx), "sections", ctx)):
        c = f"{ctx}.sections[{i}]"
        e = _obj(e, c)
        shape = e.get("shape")
        assert shape is None or shape in SECTION_SHAPES, f"{c}: shape {shape!r}"
        out.append(
            {
                "key": req_str(e, "key", c),
                "label": req_str(e, "label", c),
                "help": req_str(e, "help", c),
                "completed": req_bool(e, "completed", c),
                "group": default_str(e, "group", c),
                "shape": shape,
                "cost_category": default_str(e, "cost_category", c),
            }
        )
    return out


def check_config_templates_result(d: Any) -> list[dict[str, str]]:
    """client.rs:1871-1875, 1904-1908; start-up fatal (config_manager.rs:416)."""
    ctx = "config/templates result"
    return [{"path": req_str(_obj(e, ctx), "path", ctx)} for e in req_list(_obj(d, ctx), "templates", ctx)]


def check_config_list_result(d: Any) -> list[dict[str, Any]]:
    """client.rs:1709-1713, wire.rs:403-424; fatal for the first section's prefix (config_manager.rs:1429-1430)."""
    ctx = "config/list result"
    out = []
    for i, e in enumerate(req_list(_obj(d, ctx), "entries", ctx)):
        c = f"{ctx}.entries[{i}]"
        e = _obj(e, c)
        assert e.get("kind") in PROP_KINDS, f"{c}: kind {e.get('kind')!r}"
        assert "tab" not in e and e.get("alias_source") is None  # both optional; none of ours has them
        assert e.get("is_env_overridden", False) in (True, False)
        out.append(
            {
                "path": req_str(e, "path", c),
                "category": req_str(e, "category", c),
                "kind": e["kind"],
                "type_hint": req_str(e, "type_hint", c),
                "value": e.get("value"),
                "populated": req_bool(e, "populated", c),
                "is_secret": req_bool(e, "is_secret", c),
                "enum_variants": default_str_list(e, "enum_variants", c),
                "description": req_str(e, "description", c),
            }
        )
    return out


def check_config_map_keys_result(d: Any) -> list[str]:
    """client.rs:1826-1830."""
    keys = req_list(_obj(d, "config/map-keys result"), "keys", "config/map-keys result")
    assert all(isinstance(k, str) for k in keys)
    return keys


def check_agents_status_result(d: Any) -> list[dict[str, Any]]:
    """client.rs:2898-2915."""
    ctx = "agents/status result"
    out = []
    for i, e in enumerate(req_list(_obj(d, ctx), "agents", ctx)):
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


def check_logs_event_params(p: Any) -> dict[str, Any]:
    """logs.rs:90-123: `@timestamp` a string, `severity_number` a u64, an `event` key; else dropped."""
    ctx = "logs/event params"
    p = _obj(p, ctx)
    ts = req_str(p, "@timestamp", ctx)
    assert _u64(p.get("severity_number")), f"{ctx}: severity_number {p.get('severity_number')!r}"
    assert "event" in p, f"{ctx}: no `event`"
    return {"timestamp": ts, "severity_number": p["severity_number"], "message": p.get("message", "")}


# -- the test ----------------------------------------------------------------------------------------------------


async def _log_events(client: Client, seconds: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [n["params"] for n in client.notifications if n.get("method") == "logs/event"]
        if found:
            return found
        try:
            frame = await client.recv(max(0.05, deadline - time.monotonic()))
        except AssertionError:
            break
        if "method" in frame and "id" not in frame:
            client.notifications.append(frame)
    return [n["params"] for n in client.notifications if n.get("method") == "logs/event"]


async def test_zerocode_start_up_sequence(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    zc = await daemon.connect()
    try:
        init = await zc.call("initialize", ZEROCODE_INIT)
        assert init.get("server_version") == "0.8.4", init  # zerocode exits on any other version
        # 3 + 4a: config/sections, then config/list for its first section after the group sort (both fatal)
        sections = check_config_sections_result(await zc.call("config/sections", {}))
        assert {s["key"] for s in sections} >= {"limits", "agents", "providers", "users", "permission_profiles"}
        assert {s["key"] for s in sections if s["completed"]} >= {"limits", "providers", "agents"}
        first = sorted(sections, key=lambda s: GROUP_RANK.index(s["group"]) if s["group"] in GROUP_RANK else 8)[0]
        assert first["key"] == "agents" and first["shape"] is None
        entries = check_config_list_result(await zc.call("config/list", {"prefix": first["key"]}))
        assert {e["path"] for e in entries} >= {"agents.coder.provider", "agents.default.model"}
        provider = next(e for e in entries if e["path"] == "agents.coder.provider")
        assert provider["value"] == "oa" and provider["populated"] and "oa" in provider["enum_variants"]
        secret = check_config_list_result(await zc.call("config/list", {"prefix": "providers.oa.api_key"}))
        assert [(e["value"], e["is_secret"]) for e in secret] == [("***", True)]
        # 4: config/templates (fatal)
        templates = check_config_templates_result(await zc.call("config/templates", {}))
        assert {t["path"] for t in templates} == {"agents", "providers", "permission_profiles", "users"}
        assert check_config_map_keys_result(await zc.call("config/map-keys", {"path": "agents"})) == [
            "coder",
            "default",
        ]
        # 5: agents/status, with one stored session of `coder`
        opened = await zc.call("session/new", {"agent_alias": "coder", "chat_mode": "acp"})
        assert opened
        agents = {a["alias"]: a for a in check_agents_status_result(await zc.call("agents/status", {}))}
        assert agents["coder"] == {
            "alias": "coder",
            "enabled": True,
            "live_sessions": 1,
            "persisted_sessions": 1,
            "channels": [],
        }
        assert agents["default"]["enabled"] and agents["default"]["live_sessions"] == 0
        # 9: logs/subscribe (fatal on error), then the daemon's own records as logs/event
        assert await zc.call("logs/subscribe", {}) == {"subscribed": True}
        other = await daemon.connect()  # a connection is audited at INFO: a log record of the daemon's own
        try:
            events = await _log_events(zc, 5.0)
        finally:
            await other.close()
        assert events, "no logs/event after a new connection"
        checked = [check_logs_event_params(e) for e in events]
        assert any(c["message"].startswith("connect peer=") for c in checked)
        assert all(e["service"] == "zeroclaw" and e["schema_version"] == 2 for e in events)
        assert all(b"sk-e2e-never-shown" not in repr(e).encode() for e in events)
    finally:
        await zc.close()
    # The subscription ended with the connection; the daemon goes on serving.
    std = await daemon.client()
    await std.close()
    await asyncio.sleep(0.1)
    assert daemon.is_running()


async def test_standard_dialect_same_answers_in_camel_case(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    c = await daemon.client()
    try:
        section = (await c.call("config/sections"))["sections"][0]
        assert {"hasPicker", "isQuickstart", "costCategory", "completed", "group"} <= set(section)
        entry = (await c.call("config/list", {"prefix": "limits.max_sessions"}))["entries"]
        assert [(e["path"], e["value"], e["populated"], e["typeHint"], e["isSecret"]) for e in entry] == [
            ("limits.max_sessions", 8, True, "int", False)
        ]
        template = (await c.call("config/templates"))["templates"][0]
        assert "valueType" in template
        agents = (await c.call("agents/status"))["agents"]
        assert {a["alias"] for a in agents} == {"coder", "default"}
        assert all({"liveSessions", "persistedSessions"} <= set(a) for a in agents)
        assert await c.call("logs/subscribe") == {"subscribed": True}
        other = await daemon.connect()
        try:
            events = await _log_events(c, 5.0)
        finally:
            await other.close()
        assert events and all(check_logs_event_params(e) for e in events)
        assert "@timestamp" in events[0] and "severity_number" in events[0]  # the same params on both dialects
    finally:
        await c.close()
