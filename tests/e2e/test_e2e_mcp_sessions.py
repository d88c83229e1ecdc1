"""A session's own MCP servers (R-MCP-2): native `session/new {mcpServers}` over the socket, the gateway's rule (a
stdio entry is local-only: -32012 `local_only`; an http entry is fine), server-everything over streamable HTTP, and
the ACP SDK's client passing `mcpServers` to `zeroclaw acp`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import HttpMcpServer, McpServerStdio, ToolCallStart
from acp_harness import TIMEOUT, initialized, open_acp
from e2e_harness import READY_RE, Daemon, DaemonFactory
from js_tools import node_modules
from session_client import Peer, check_turn, new_sid
from waiting import until_sync
from websockets.asyncio.client import connect

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Unix socket")

CRASHY = Path(__file__).resolve().parent / "mcp_servers" / "crashy.py"
CONFIG = """\
[tools]
approval_timeout_secs = 20

[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]

[agents.default]
auto_approve = ["mcp__*"]
"""


def stdio_entry(name: str) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [str(CRASHY)], "env": []}


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    """server-everything in its streamableHttp mode on a free port; its /mcp URL."""
    node = shutil.which("node")
    assert node is not None
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    script = node_modules() / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    proc = subprocess.Popen(
        [node, str(script), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until_sync(lambda: _listening(port), timeout=30, what="server-everything listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def gateway_daemon() -> Iterator[tuple[Daemon, str]]:
    factory = DaemonFactory()
    try:
        d = factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
        m = READY_RE.match(d.ready_line or "")
        assert m is not None and m["gateway"] != "off", d.ready_line
        yield d, m["gateway"]
    finally:
        factory.close()


async def tool_turn(peer: Peer, sid: str, name: str, arguments: object) -> str:
    turn = await peer.prompt(sid, f"/tool {name} {json.dumps(arguments)}")
    check_turn(turn, sid)
    return str(turn.of_type("tool_result")[0]["rawOutput"])


@pytest.mark.req("R-MCP-2")
async def test_native_session_new_adds_a_stdio_server_for_that_session(gateway_daemon: tuple[Daemon, str]) -> None:
    async with await Peer.open(gateway_daemon[0]) as owner:
        sid = await new_sid(owner, mcpServers=[stdio_entry("mine")])
        assert await tool_turn(owner, sid, "mcp__mine__noop", {}) == "ok"
        names = {t["name"] for t in (await owner.call("tools/list", {"sessionId": sid}))["tools"]}
        assert "mcp__mine__noop" in names
        other = await new_sid(owner)  # another session has no such server
        names = {t["name"] for t in (await owner.call("tools/list", {"sessionId": other}))["tools"]}
        assert "mcp__mine__noop" not in names
        assert "no such tool" in await tool_turn(owner, other, "mcp__mine__noop", {})


async def ws_call(conn: Any, rid: int, method: str, params: Any = None) -> dict[str, Any]:
    await conn.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}, "id": rid}))
    while True:
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(conn.recv(), TIMEOUT))
        if frame.get("id") == rid:
            return frame


@pytest.mark.req("R-MCP-2")
@pytest.mark.req("R-MCP-5")
async def test_gateway_refuses_stdio_and_takes_http(gateway_daemon: tuple[Daemon, str], everything_http: str) -> None:
    daemon, url = gateway_daemon
    async with await daemon.client() as c:
        token = (await c.call("pairing/create", {"user": "ops"}))["token"]
    async with connect("ws" + url.removeprefix("http") + "/rpc", proxy=None) as conn:
        assert "result" in await ws_call(conn, 1, "initialize", {"protocolVersion": 1, "authToken": token})
        refused = await ws_call(conn, 2, "session/new", {"mcpServers": [stdio_entry("local")]})
        assert refused["error"]["code"] == -32012 and refused["error"]["data"]["kind"] == "local_only", refused
        http = {"type": "http", "name": "web", "url": everything_http, "headers": [{"name": "X-Test", "value": "1"}]}
        sid = (await ws_call(conn, 3, "session/new", {"mcpServers": [http]}))["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": '/tool mcp__web__echo {"message": "over http"}'}
        answer = await ws_call(conn, 4, "session/prompt", prompt)
        assert answer["result"]["content"] == "mcp__web__echo returned:\nEcho: over http", answer


@pytest.mark.req("R-MCP-2")
async def test_the_acp_sdk_client_passes_mcp_servers(gateway_daemon: tuple[Daemon, str], everything_http: str) -> None:
    daemon = gateway_daemon[0]
    async with open_acp(daemon) as (conn, recorder, _process):
        init = await initialized(conn)
        assert init.agent_capabilities.mcp_capabilities.http is True
        assert init.agent_capabilities.mcp_capabilities.sse is False
        stdio = McpServerStdio(name="mine", command=sys.executable, args=[str(CRASHY)], env=[])
        web = HttpMcpServer(type="http", name="web", url=everything_http, headers=[])
        workdir = daemon.root / "project"
        workdir.mkdir(exist_ok=True)
        sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[stdio, web])).session_id
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("/tool mcp__mine__pid {}")]), TIMEOUT)
        await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[text_block('/tool mcp__web__get-sum {"a": 1, "b": 2}')]), TIMEOUT
        )
        started = [u.title for u in recorder.of(sid, ToolCallStart)]
        assert any("mcp__mine__pid" in t for t in started) and any("mcp__web__get-sum" in t for t in started), started
        assert "The sum of 1 and 2 is 3." in recorder.text(sid)
        again = await conn.resume_session(cwd=str(workdir), session_id=sid, mcp_servers=[stdio])
        assert again is not None
