"""The gateway of a real `zeroclaw daemon` (R-GW-1, R-GW-4, R-PATH-7, R-EPH-1, R-SEC-3)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from websockets.asyncio.client import connect

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

TIMEOUT = 5.0


def start(factory: DaemonFactory, config: Any = None, args: tuple[str, ...] = ()) -> tuple[Daemon, str]:
    d = factory.start(config, no_gateway=False, args=["--gateway-port", "0", *args])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None
    assert m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


async def owner_token(d: Daemon) -> str:
    async with await d.client() as c:
        result = await c.call("pairing/create", {"user": "ops"})
    token: str = result["token"]
    return token


OPS_TOML = """
[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]
"""


async def ws_call(conn: Any, rid: int, method: str, params: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        frame["params"] = params
    await conn.send(json.dumps(frame))
    response: dict[str, Any] = json.loads(await asyncio.wait_for(conn.recv(), TIMEOUT))
    return response


@pytest.mark.req("R-GW-1")
async def test_ready_line_names_a_gateway_that_answers(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    assert url.startswith("http://127.0.0.1:")
    async with httpx.AsyncClient(base_url=url, trust_env=False) as client:
        health = await client.get("/health")
        assert health.status_code == 200
        assert health.headers["server"] == "zeroclaw"
        assert (await client.get("/api/status")).status_code == 401
    async with await d.client() as c:
        status = await c.call("status")
    assert status["gateway"] == {"url": url}


@pytest.mark.req("R-GW-4")
async def test_websocket_peer_shares_the_dispatcher_and_is_audited(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory, OPS_TOML)
    token = await owner_token(d)
    ws_url = "ws" + url.removeprefix("http") + "/rpc"
    async with connect(ws_url, proxy=None, additional_headers={"Authorization": f"Bearer {token}"}) as conn:
        init = await ws_call(conn, 1, "initialize", {"protocolVersion": 1})
        assert init["result"]["principal"]["id"] == "user:ops"
        status = await ws_call(conn, 2, "status")
        assert status["result"]["connections"] >= 1
    entries = await d.wait_audit(lambda es: any(e["event"] == "disconnect" and e["peer"].startswith("ws:") for e in es))
    ws_events = [e["event"] for e in entries if e["peer"].startswith("ws:127.0.0.1:")]
    assert ws_events[:2] == ["connect", "initialize"]
    assert token not in d.audit_path.read_text() and token not in d.stderr


@pytest.mark.req("R-EPH-1")
async def test_ephemeral_counts_websocket_clients(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory, {"daemon": {"ephemeral_grace_secs": 0.3}}, ("--ephemeral",))
    ws_url = "ws" + url.removeprefix("http") + "/rpc"
    async with connect(ws_url, proxy=None) as conn:
        await asyncio.sleep(0.8)  # past the 0.3 s grace: a daemon that did not count this client would be gone
        assert d.is_running(), d.describe()
        await ws_call(conn, 1, "status")
    assert await asyncio.to_thread(d.wait_exit, 5) == 0


@pytest.mark.req("R-GW-4")
@pytest.mark.req("R-BIDI-5")
async def test_a_turn_streams_and_asks_over_the_websocket(daemon_factory: DaemonFactory) -> None:
    """Same streaming and bidirectional requests as the socket: updates arrive as text frames, the daemon's
    `elicitation/create` is answered by the WebSocket peer, and the turn completes with the answer."""
    d, url = start(daemon_factory, OPS_TOML)
    token = await owner_token(d)
    ws_url = "ws" + url.removeprefix("http") + "/rpc"
    async with connect(ws_url, proxy=None) as conn:
        init = {"protocolVersion": 1, "authToken": token, "clientCapabilities": {"elicitation": {}}}
        assert "result" in await ws_call(conn, 1, "initialize", init)
        sid = (await ws_call(conn, 2, "session/new", {}))["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": "/ask favourite colour?"}
        await conn.send(json.dumps({"jsonrpc": "2.0", "method": "session/prompt", "params": prompt, "id": 3}))
        updates: list[dict[str, Any]] = []
        while True:
            frame = json.loads(await asyncio.wait_for(conn.recv(), TIMEOUT))
            if frame.get("method") == "elicitation/create":
                assert frame["id"] == "zc-out-0" and frame["params"]["sessionId"] == sid
                answer = {"action": "accept", "content": {"answer": "teal"}}
                await conn.send(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": answer}))
            elif frame.get("method") == "session/update":
                updates.append(frame["params"])
            elif frame.get("id") == 3:
                break
    assert frame["result"]["stopReason"] == "end_turn" and "teal" in frame["result"]["content"]
    kinds = [u["type"] for u in updates]
    assert kinds[:2] == ["usage", "tool_call"] and kinds[-1] == "turn_complete"  # the asking step's usage first
    result = next(u for u in updates if u["type"] == "tool_result")
    assert result["name"] == "ask_user" and result["rawOutput"] == "teal"
    chunks = "".join(u["text"] for u in updates if u["type"] == "agent_message_chunk")
    assert chunks == frame["result"]["content"] == updates[-1]["content"]
