"""`GET /acp` on the gateway of a real daemon (R-EDIT-1, R-EDIT-4, R-EDIT-5, R-EDIT-6).

The npm ACP SDK's own WebSocket client (`@agentclientprotocol/sdk`, tests/js/acp_ws_client.mjs) drives a turn,
two permissions and two cancels with a paired token given each of the three ways; the rest (subprotocol echo,
Origin guard, `?agent=`, no token, a 2 MiB prompt) is checked with a plain WebSocket client.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from js_tools import run_node
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

TIMEOUT = 15.0
CONFIG = """
[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]

[tools]
approval_timeout_secs = 30

[limits]
max_prompt_chars = 4000000

[agents.default]
provider = "scripted"

[agents.second]
provider = "scripted"
"""


def start(factory: DaemonFactory) -> tuple[Daemon, str]:
    daemon = factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    m = READY_RE.match(daemon.ready_line or "")
    assert m is not None and m["gateway"] != "off", daemon.ready_line
    return daemon, m["gateway"]


async def token_of(daemon: Daemon) -> str:
    async with await daemon.client() as c:
        result = await c.call("pairing/create", {"user": "ops"})
    return str(result["token"])


def ws_url(http_url: str) -> str:
    return http_url.replace("http://", "ws://", 1).rstrip("/") + "/acp"


def project(daemon: Daemon) -> str:
    path = daemon.root / "project"
    path.mkdir(exist_ok=True)
    return str(path)


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EDIT-4")
@pytest.mark.req("R-EDIT-5")
@pytest.mark.req("R-EDIT-6")
@pytest.mark.parametrize("via", ["header", "subprotocol", "query"])
def test_npm_sdk_drives_acp_over_websocket(daemon_factory: DaemonFactory, via: str) -> None:
    daemon, url = start(daemon_factory)
    token = asyncio.run(token_of(daemon))
    seen = run_node("acp_ws_client.mjs", {"url": ws_url(url), "token": token, "via": via, "cwd": project(daemon)})
    assert seen["init"]["protocolVersion"] == 1
    assert seen["init"]["agentCapabilities"]["loadSession"] is True
    assert seen["stops"] == ["end_turn", "end_turn", "end_turn", "cancelled", "cancelled", "end_turn"], seen
    assert seen["results"] == ["completed", "failed"], seen  # allowed, rejected; the withdrawn one never ran
    assert len(seen["permissions"]) == 3 and seen["withdrawn"] == 1, seen
    assert "You said: «hello»" in seen["text"] and "You said: «after»" in seen["text"]
    assert {"agent_message_chunk", "tool_call", "tool_call_update"} <= set(seen["kinds"])


async def _call(ws: Any, rid: int, method: str, params: Any) -> dict[str, Any]:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
    while True:
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        if frame.get("id") == rid:
            return frame


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EDIT-6")
async def test_acp_websocket_guards_agent_2_mib_prompt_and_the_panel_list(daemon_factory: DaemonFactory) -> None:
    daemon, url = start(daemon_factory)
    token = await token_of(daemon)
    acp = ws_url(url)
    async with httpx.AsyncClient() as http:
        plain = await http.get(url.rstrip("/") + "/acp")
    assert plain.status_code == 426
    with pytest.raises(InvalidStatus) as refused:
        async with connect(acp, origin="http://evil.example", proxy=None):  # type: ignore[arg-type]
            pass
    assert refused.value.response.status_code == 403
    async with connect(acp, subprotocols=["zeroclaw.acp.v1"], proxy=None) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "zeroclaw.acp.v1"
        assert (await _call(ws, 1, "initialize", INIT))["error"]["code"] == -32000  # no token
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(f"{acp}?agent=second", additional_headers=headers, proxy=None, max_size=None) as ws:
        assert ws.subprotocol is None  # none offered, none chosen
        assert (await _call(ws, 1, "initialize", INIT))["result"]["protocolVersion"] == 1
        new = (await _call(ws, 2, "session/new", {"cwd": project(daemon), "mcpServers": []}))["result"]
        assert new["configOptions"][0]["currentValue"] == "second"
        big = "y" * (2 * 1024 * 1024)
        turn = {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": big}]}
        assert (await _call(ws, 3, "session/prompt", turn))["result"] == {"stopReason": "end_turn"}
    async with httpx.AsyncClient() as http:  # the panel's list shows the editor's session
        listed = (await http.get(url.rstrip("/") + "/api/sessions", headers=headers)).json()
    assert new["sessionId"] in [entry["sessionId"] for entry in listed["sessions"]], listed
