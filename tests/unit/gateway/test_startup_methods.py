"""The methods zerocode calls on start (R-ZC-4) over the real services, on both dialects: `config/sections`,
`config/list`, `config/map-keys`, `config/templates`, `agents/status`, `logs/subscribe`. (Here because
`gateway_env` assembles the services as the daemon does; the calls go over the in-memory transport.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_env import Env, build_env, close_env

from rpc.transports.memory import MemoryTransport

pytestmark = pytest.mark.req("R-ZC-4")

TOML = """\
[limits]
max_sessions = 8

[providers.oa]
kind = "openai"
api_key = "sk-never-shown"

[agents.coder]
provider = "oa"

[permission_profiles.reader]
grants = { system = ["read"], config = ["read"] }

[permission_profiles.worker]
grants = { sessions = ["create", "read"] }
allowed_agents = ["coder"]

[users.alice]
permission_profiles = ["reader"]

[users.walt]
permission_profiles = ["worker"]
"""
ZEROCODE_INIT = {"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}, "env": {"HOME": "/h"}}


@pytest.fixture
async def env(tmp_path: Path) -> Any:
    made = await build_env(tmp_path / "env", TOML)
    yield made
    await close_env(made)


class Caller:
    def __init__(self, env: Env) -> None:
        self.t = MemoryTransport(env.server)
        self.n = 0

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        self.n += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": f"zc-out-{self.n}"}
        if params is not None:
            frame["params"] = params
        self.t.feed(frame)
        while True:
            reply: dict[str, Any] = await self.t.next_message()
            if reply.get("id") == frame["id"]:
                return reply

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]


async def caller(env: Env, init: dict[str, Any], user: str | None = None) -> Caller:
    c = Caller(env)
    if user is not None:
        init = {**init, "authToken": (await env.token(user))[1]}
    await c.result("initialize", init)
    return c


async def test_zerocode_dialect_answers_in_zeroclaw_field_names(env: Env) -> None:
    c = await caller(env, ZEROCODE_INIT)
    found = (await c.result("config/sections", {}))["sections"]
    assert {s["key"] for s in found} >= {"limits", "agents", "providers", "users", "permission_profiles"}
    limits = next(s for s in found if s["key"] == "limits")
    assert limits == {
        "key": "limits",
        "label": "Limits",
        "help": limits["help"],
        "has_picker": False,
        "completed": True,
        "ready": False,
        "group": "Operations",
        "is_quickstart": False,
        "cost_category": "",
    }
    assert (await c.result("config/templates", {}))["templates"][0] == {
        "path": "agents",
        "kind": "map",
        "value_type": "Agent",
        "description": "Agents, one per alias: provider, model, tools and workspace.",
    }
    entries = (await c.result("config/list", {"prefix": "providers.oa"}))["entries"]
    key = next(e for e in entries if e["path"] == "providers.oa.api_key")
    assert key == {
        "path": "providers.oa.api_key",
        "category": "providers",
        "kind": "string",
        "type_hint": "Secret | None",
        "value": "***",
        "populated": True,
        "is_secret": True,
        "is_env_overridden": False,
        "enum_variants": [],
        "description": "unset by default",
    }
    assert b"sk-never-shown" not in b"".join(c.t.sent)
    assert await c.result("config/map-keys", {"path": "agents"}) == {"path": "agents", "keys": ["coder", "default"]}
    agents = (await c.result("agents/status", {}))["agents"]
    assert agents == [
        {"alias": "coder", "enabled": True, "live_sessions": 0, "persisted_sessions": 0, "channels": []},
        {"alias": "default", "enabled": True, "live_sessions": 0, "persisted_sessions": 0, "channels": []},
    ]
    assert await c.result("logs/subscribe", {}) == {"subscribed": True}


async def test_standard_dialect_answers_in_camel_case(env: Env) -> None:
    c = await caller(env, {"protocolVersion": 1})
    section = (await c.result("config/sections"))["sections"][0]
    assert set(section) == {"key", "label", "help", "hasPicker", "completed", "ready", "group", "isQuickstart",
                            "costCategory"}  # fmt: skip
    entry = (await c.result("config/list", {"prefix": "permission_profiles.worker.grants"}))["entries"][0]
    assert entry["typeHint"] == "dict[str, list[str]]" and entry["isSecret"] is False
    assert entry["value"] == {"sessions": ["create", "read"]}  # user data: keys never renamed
    template = (await c.result("config/templates"))["templates"][0]
    assert set(template) == {"path", "kind", "valueType", "description"}
    agent = (await c.result("agents/status"))["agents"][0]
    assert set(agent) == {"alias", "enabled", "liveSessions", "persistedSessions", "channels"}
    assert await c.result("logs/subscribe") == {"subscribed": True}


async def test_counts_are_the_callers_own_sessions(env: Env) -> None:
    walt = await caller(env, {"protocolVersion": 1}, "walt")
    opened = await walt.result("session/new", {"agentAlias": "coder"})
    assert opened
    owner = await caller(env, {"protocolVersion": 1})
    await owner.result("session/new", {"agentAlias": "coder"})
    mine = {a["alias"]: a for a in (await walt.result("agents/status"))["agents"]}
    assert (mine["coder"]["liveSessions"], mine["coder"]["persistedSessions"]) == (1, 1)
    assert mine["coder"]["enabled"] and not mine["default"]["enabled"]  # walt may use only `coder`
    everyone = {a["alias"]: a for a in (await owner.result("agents/status"))["agents"]}
    assert (everyone["coder"]["liveSessions"], everyone["coder"]["persistedSessions"]) == (2, 2)


async def test_grants_and_bad_params(env: Env) -> None:
    alice = await caller(env, {"protocolVersion": 1}, "alice")  # system:read and config:read only
    assert (await alice.result("config/sections"))["sections"]
    assert await alice.result("logs/subscribe") == {"subscribed": True}
    refused = await alice.call("agents/status")
    assert refused["error"]["data"]["grant"] == "sessions:read"
    walt = await caller(env, {"protocolVersion": 1}, "walt")
    for method in ("config/sections", "config/list", "config/templates", "logs/subscribe"):
        assert "error" in await walt.call(method), method
    owner = await caller(env, {"protocolVersion": 1})
    missing = await owner.call("config/map-keys", {"path": "limits"})
    assert missing["error"]["code"] == -32602
    assert (await owner.call("config/map-keys", {}))["error"]["code"] == -32602
    assert (await owner.result("config/list", {"prefix": "nothing.here"})) == {"entries": []}
