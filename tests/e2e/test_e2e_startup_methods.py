"""The methods zerocode calls on start (R-ZC-4), against a real daemon: `config/sections` (and the `config/list` of
its first section after zerocode's group sort), `config/templates`, `config/map-keys`, `agents/status`,
`logs/subscribe` and then `logs/event`. The zerocode dialect's answers are judged the way zerocode v0.8.4 reads them
(the checkers below are copied from the research's `zerocode_frames.py`, which cites apps/zerocode/src at tag
v0.8.4); the standard dialect's carry the same fields in camelCase.
"""

from __future__ import annotations

from typing import Any

import pytest
import zerocode_frames as frames
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

# -- the test ----------------------------------------------------------------------------------------------------


async def _log_events(client: Client, seconds: float) -> list[dict[str, Any]]:
    await client.wait_notification("logs/event", seconds)
    return [n["params"] for n in client.notifications if n.get("method") == "logs/event"]


async def test_zerocode_start_up_sequence(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    zc = await daemon.connect()
    try:
        init = await zc.call("initialize", ZEROCODE_INIT)
        assert init.get("server_version") == "0.8.4", init  # zerocode exits on any other version
        # 3 + 4a: config/sections, then config/list for its first section after the group sort (both fatal)
        sections = frames.check_config_sections_result(await zc.call("config/sections", {}))
        assert {s["key"] for s in sections} >= {"limits", "agents", "providers", "users", "permission_profiles"}
        assert {s["key"] for s in sections if s["completed"]} >= {"limits", "providers", "agents"}
        first = frames.first_section(sections)
        assert first["key"] == "agents" and first["shape"] is None
        entries = frames.check_config_list_result(await zc.call("config/list", {"prefix": first["key"]}))
        assert {e["path"] for e in entries} >= {"agents.coder.provider", "agents.default.model"}
        provider = next(e for e in entries if e["path"] == "agents.coder.provider")
        assert provider["value"] == "oa" and provider["populated"] and "oa" in provider["enum_variants"]
        secret = frames.check_config_list_result(await zc.call("config/list", {"prefix": "providers.oa.api_key"}))
        assert [(e["value"], e["is_secret"]) for e in secret] == [("***", True)]
        # 4: config/templates (fatal)
        templates = frames.check_config_templates_result(await zc.call("config/templates", {}))
        assert {t["path"] for t in templates} == {"agents", "providers", "permission_profiles", "users"}
        assert frames.check_config_map_keys_result(await zc.call("config/map-keys", {"path": "agents"})) == [
            "coder",
            "default",
        ]
        # 5: agents/status, with one stored session of `coder`
        opened = await zc.call("session/new", {"agent_alias": "coder", "chat_mode": "acp"})
        assert opened
        agents = {a["alias"]: a for a in frames.check_agents_status_result(await zc.call("agents/status", {}))}
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
        checked = [frames.check_logs_event_params(e) for e in events]
        assert any(c["message"].startswith("connect peer=") for c in checked)
        assert all(e["service"] == "zeroclaw" and e["schema_version"] == 2 for e in events)
        assert all(b"sk-e2e-never-shown" not in repr(e).encode() for e in events)
    finally:
        await zc.close()
    # The subscription ended with the connection; the daemon goes on serving.
    mark = daemon.stderr_mark()
    std = await daemon.client()
    await std.close()
    await daemon.wait_stderr("zeroclaw.audit: disconnect", after=mark)  # its log lines had nowhere to go
    assert daemon.is_running()
    async with await daemon.client() as again:
        assert (await again.call("status"))["pid"] == daemon.pid


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
        assert events and all(frames.check_logs_event_params(e) for e in events)
        assert "@timestamp" in events[0] and "severity_number" in events[0]  # the same params on both dialects
    finally:
        await c.close()
