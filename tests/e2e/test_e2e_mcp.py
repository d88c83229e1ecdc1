"""Tools from MCP servers through a real daemon (R-MCP): `@modelcontextprotocol/server-everything` over stdio and a
FastMCP server of our own (tests/e2e/mcp_servers/crashy.py), called with the scripted provider's `/tool`
directive: listing, calls, approvals, errors, timeouts, crash and restart, no orphans after SIGTERM or SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ToolCallProgress, ToolCallStart
from acp_harness import TIMEOUT, initialized, open_acp
from e2e_harness import Daemon, DaemonFactory
from js_tools import node_modules
from session_client import Peer, check_turn, new_sid
from waiting import until_sync

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Unix socket, /proc")

CRASHY = Path(__file__).resolve().parent / "mcp_servers" / "crashy.py"


def everything_js() -> str:
    return str(node_modules() / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js")


def config(extra: str = "") -> str:
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    return f"""\
[tools]
approval_timeout_secs = 20

[mcp.servers.ev]
command = {json.dumps(node)}
args = [{json.dumps(everything_js())}, "stdio"]

[mcp.servers.crashy]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(CRASHY))}]
call_timeout_secs = 2

[agents.default]
mcp_servers = ["ev", "crashy"]
auto_approve = ["mcp__crashy__*"]
{extra}"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(config())
    finally:
        factory.close()


async def call_tool(peer: Peer, sid: str, name: str, arguments: object, decision: str | None = None) -> tuple[str, str]:
    """Run `/tool NAME JSON`, answering its approval with `decision` (None: none is expected); (tool result,
    the agent's reply)."""
    mark, fut = await peer.start_prompt(sid, f"/tool {name} {json.dumps(arguments)}")
    if decision is not None:
        request = await peer.wait_update("approval_request", session_id=sid, start=mark)
        assert request["toolName"] == name and request["arguments"] == arguments
        await peer.call("session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": decision})
    turn = await peer.finish_turn(sid, mark, fut)
    check_turn(turn, sid)
    if decision is None:
        assert "approval_request" not in turn.types, turn.types
    [started] = turn.of_type("tool_call")
    assert started["name"] == name and started["rawInput"] == arguments, started
    [result] = turn.of_type("tool_result")
    return str(result["rawOutput"]), str(turn.result["content"])


@pytest.mark.req("R-MCP-1")
@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-MCP-5")
async def test_a_stdio_server_everything_tool_runs_after_approval(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        output, reply = await call_tool(owner, sid, "mcp__ev__echo", {"message": "hello mcp"}, "allow_once")
        assert output == "Echo: hello mcp"
        assert reply == "mcp__ev__echo returned:\nEcho: hello mcp"
        output, _ = await call_tool(owner, sid, "mcp__ev__get-sum", {"a": 2, "b": 40}, "reject")
        assert "rejected" in output and "42" not in output
        output, _ = await call_tool(
            owner, sid, "mcp__ev__get-structured-content", {"location": "Chicago"}, "allow_once"
        )
        assert "temperature" in output, output
        output, _ = await call_tool(owner, sid, "mcp__ev__get-tiny-image", {}, "allow_once")
        assert "[image content: image/png]" in output, output


@pytest.mark.req("R-MCP-3")
async def test_errors_and_timeouts_are_results_and_the_turn_goes_on(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        output, _ = await call_tool(owner, sid, "mcp__crashy__fail", {})  # auto_approve: mcp__crashy__*
        assert "failed" in output, output
        output, _ = await call_tool(owner, sid, "mcp__crashy__slow", {"seconds": 30})
        assert "did not answer within 2 s" in output, output
        output, _ = await call_tool(owner, sid, "mcp__ev__echo", {"wrong": 1}, "allow_once")
        assert "failed" in output or "error" in output.lower(), output
        output, _ = await call_tool(owner, sid, "mcp__crashy__noop", {})
        assert output == "ok"


@pytest.mark.req("R-MCP-4")
async def test_a_crashed_server_is_started_again_at_the_next_call(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        first, _ = await call_tool(owner, sid, "mcp__crashy__pid", {})
        output, _ = await call_tool(owner, sid, "mcp__crashy__crash", {})
        assert "stopped during this call" in output, output
        second, _ = await call_tool(owner, sid, "mcp__crashy__pid", {})
        assert first.isdigit() and second.isdigit() and first != second
        assert not Path(f"/proc/{first}").exists() or _zombie(int(first))


@pytest.mark.req("R-MCP-4")
async def test_a_server_stops_with_the_last_session_that_used_it() -> None:
    factory = DaemonFactory()
    try:
        await _stops_with_last_session(factory.start(config()))
    finally:
        factory.close()


async def _stops_with_last_session(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        first, second = await new_sid(owner), await new_sid(owner)
        pid, _ = await call_tool(owner, first, "mcp__crashy__pid", {})
        assert pid == (await call_tool(owner, second, "mcp__crashy__pid", {}))[0]  # one server, shared
        await owner.call("session/close", {"sessionId": first})
        status = {s["name"]: s for s in (await owner.call("mcp/status", {}))["servers"]}
        assert status["crashy"]["state"] == "ready" and alive({int(pid)})
        await owner.call("session/close", {"sessionId": second})
        until_sync(lambda: not alive({int(pid)}), timeout=10, what="the server stopped with its last session")
        status = {s["name"]: s for s in (await owner.call("mcp/status", {}))["servers"]}
        assert status["crashy"]["state"] == "stopped" and status["crashy"]["tools"] == []


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def descendants(root: int) -> set[int]:
    """Every live process whose parent chain reaches `root`, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    out: set[int] = set()
    for pid in parents:
        p = pid
        while p in parents and p > 1:
            p = parents[p]
            if p == root:
                out.add(pid)
                break
    return out


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if Path(f"/proc/{p}").exists() and not _zombie(p)}


@pytest.mark.req("R-MCP-4")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
async def test_no_server_outlives_the_daemon(sig: int) -> None:
    factory = DaemonFactory()
    try:
        d = factory.start(config())
        async with await Peer.open(d) as owner:
            sid = await new_sid(owner)
            await call_tool(owner, sid, "mcp__crashy__noop", {})
            await call_tool(owner, sid, "mcp__ev__echo", {"message": "x"}, "allow_once")
            children = descendants(d.pid)
            assert len(children) >= 2, children  # crashy's python and server-everything's node
        d.send_signal(sig)
        d.wait_exit()
        until_sync(lambda: not alive(children), timeout=10, what=f"the MCP servers {children} ended")
    finally:
        factory.close()
    assert os.name == "posix"


@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-MCP-4")
async def test_tools_list_and_mcp_status(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        listed = (await owner.call("tools/list", {"agentAlias": "default"}))["tools"]
        by_name = {t["name"]: t for t in listed}
        assert by_name["bash"]["server"] is None
        echo = by_name["mcp__ev__echo"]
        assert echo["server"] == "ev" and echo["inputSchema"]["properties"]["message"]["type"] == "string"
        assert by_name["mcp__crashy__noop"]["server"] == "crashy"
        sid = await new_sid(owner)
        assert {t["name"] for t in (await owner.call("tools/list", {"sessionId": sid}))["tools"]} == set(by_name)
        status = {s["name"]: s for s in (await owner.call("mcp/status"))["servers"]}
        assert status["ev"]["state"] == "ready" and "echo" in status["ev"]["tools"] and status["ev"]["error"] is None


@pytest.mark.req("R-MCP-3")
async def test_progress_streams_as_tool_progress(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        mark, fut = await owner.start_prompt(sid, '/tool mcp__crashy__steps {"count": 3}')
        turn = await owner.finish_turn(sid, mark, fut)
        check_turn(turn, sid)
        [call] = turn.of_type("tool_call")
        progress = turn.of_type("tool_progress")
        assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]
        assert {p["toolCallId"] for p in progress} == {call["toolCallId"]}
        assert turn.types.index("tool_progress") > turn.types.index("tool_call")
        assert turn.of_type("tool_result")[0]["rawOutput"] == "3 steps done"
        # server-everything's own progress notifications (its long-running operation)
        mark, fut = await owner.start_prompt(
            sid, '/tool mcp__ev__trigger-long-running-operation {"duration": 0.2, "steps": 2}'
        )
        request = await owner.wait_update("approval_request", session_id=sid, start=mark)
        await owner.call(
            "session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "allow_once"}
        )
        turn = await owner.finish_turn(sid, mark, fut)
        assert [p["progress"] for p in turn.of_type("tool_progress")] == [1, 2], turn.types


@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-BIDI-5")
async def test_an_mcp_elicitation_is_asked_of_the_client_and_answered_back(daemon: Daemon) -> None:
    asked: list[dict[str, object]] = []

    def answer(frame: dict[str, object]) -> object:
        asked.append(frame)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with await Peer.open(daemon, elicitation=True, answer=answer) as owner:
        sid = await new_sid(owner)
        output, _ = await call_tool(owner, sid, "mcp__crashy__ask", {})
        assert output == "Hello, Ada!", output
        [question] = asked
        params = question["params"]
        assert isinstance(params, dict) and params["message"] == "What is your name?"
        assert params["requestedSchema"]["properties"]["name"]["type"] == "string"
    async with await Peer.open(daemon) as no_forms:  # a client without the capability: the server hears "cancel"
        sid = await new_sid(no_forms)
        output, _ = await call_tool(no_forms, sid, "mcp__crashy__ask", {})
        assert output == "No name: cancel", output


@pytest.mark.req("R-MCP-3")
async def test_list_changed_offers_the_new_tool_from_the_next_step() -> None:
    factory = DaemonFactory()  # its own daemon: `grow` changes the shared server for everyone
    try:
        daemon = factory.start(config())
        async with await Peer.open(daemon) as owner:
            sid = await new_sid(owner)
            assert "no such tool" in (await call_tool(owner, sid, "mcp__crashy__extra", {}))[0]
            # One turn: the first step's call adds `extra`, the next step calls it.
            turn = await owner.prompt(sid, "/tools mcp__crashy__grow {}\nmcp__crashy__extra {}")
            check_turn(turn, sid)
            assert [c["name"] for c in turn.of_type("tool_call")] == ["mcp__crashy__grow", "mcp__crashy__extra"]
            assert [r["rawOutput"] for r in turn.of_type("tool_result")] == ["grown", "extra here"]
            assert turn.result["content"] == "mcp__crashy__extra returned:\nextra here"
            tools = (await owner.call("tools/list", {"sessionId": sid}))["tools"]
            assert "mcp__crashy__extra" in {t["name"] for t in tools}
    finally:
        factory.close()


@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-BIDI-5")
async def test_concurrent_elicitations_on_a_shared_server_go_to_their_own_sessions(daemon: Daemon) -> None:
    """Two sessions on two connections call a tool of one server that elicits once both calls are in (or after
    1 s): each question is asked of the client whose session made the call, and each answer reaches its call."""
    asked: dict[str, list[dict[str, object]]] = {"Ada": [], "Bob": []}

    def answering(name: str) -> Callable[[dict[str, object]], object]:
        def answer(frame: dict[str, object]) -> object:
            asked[name].append(frame)
            return {"action": "accept", "content": {"name": name}}

        return answer

    async with (
        await Peer.open(daemon, elicitation=True, answer=answering("Ada")) as ada,
        await Peer.open(daemon, elicitation=True, answer=answering("Bob")) as bob,
    ):
        first, second = await new_sid(ada), await new_sid(bob)
        mark_a, fut_a = await ada.start_prompt(first, "/tool mcp__crashy__ask_pair {}")
        await ada.wait_update("tool_call", session_id=first, start=mark_a)
        mark_b, fut_b = await bob.start_prompt(second, "/tool mcp__crashy__ask_pair {}")
        turn_a = await ada.finish_turn(first, mark_a, fut_a)
        turn_b = await bob.finish_turn(second, mark_b, fut_b)
        assert turn_a.of_type("tool_result")[0]["rawOutput"] == "Hello, Ada!"
        assert turn_b.of_type("tool_result")[0]["rawOutput"] == "Hello, Bob!"
        assert len(asked["Ada"]) == 1 and len(asked["Bob"]) == 1, asked


def flaky_config(markers: Path) -> str:
    flaky = str(CRASHY.with_name("flaky.py"))
    return f"""\
[tools]
approval_timeout_secs = 20

[mcp.servers.flaky]
command = {json.dumps(sys.executable)}
args = [{json.dumps(flaky)}, {json.dumps(str(markers / "flaky"))}, "fail"]
env = {{ FLAKY_TOKEN = "sekrit-token" }}

[mcp.servers.stuck]
command = {json.dumps(sys.executable)}
args = [{json.dumps(flaky)}, {json.dumps(str(markers / "stuck"))}, "hang"]
startup_timeout_secs = 1

[agents.default]
mcp_servers = ["flaky", "stuck"]
auto_approve = ["mcp__*"]
"""


@pytest.mark.req("R-MCP-4")
async def test_a_server_that_does_not_start_fails_the_call_not_the_turn(tmp_path: Path) -> None:
    factory = DaemonFactory()
    try:
        daemon = factory.start(flaky_config(tmp_path))
        async with await Peer.open(daemon) as owner:
            sid = await new_sid(owner)
            output, reply = await call_tool(owner, sid, "mcp__flaky__noop", {})
            assert output.startswith("The MCP server 'flaky' failed to start, so mcp__flaky__noop did not run: ")
            assert "tried again at the next call" in output and reply.startswith("mcp__flaky__noop returned:")
            output, _ = await call_tool(owner, sid, "mcp__stuck__noop", {})
            assert "'stuck' failed to start" in output and "did not start within 1 s" in output, output
            status = {s["name"]: s for s in (await owner.call("mcp/status", {}))["servers"]}
            assert status["flaky"]["state"] == "failed" and status["flaky"]["error"], status
            assert status["stuck"]["state"] == "failed" and "within 1 s" in status["stuck"]["error"], status
            assert "sekrit" not in json.dumps(status) + output
            (tmp_path / "flaky").touch()  # fixed between calls: the next call starts it
            assert (await call_tool(owner, sid, "mcp__flaky__noop", {}))[0] == "ok"
            status = {s["name"]: s for s in (await owner.call("mcp/status", {}))["servers"]}
            assert status["flaky"]["state"] == "ready" and status["flaky"]["error"] is None, status
    finally:
        factory.close()


@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-EDIT-5")
async def test_acp_asks_permission_for_an_mcp_tool(daemon: Daemon) -> None:
    """Over ACP a call of an MCP tool that is not auto-approved is `session/request_permission`: allow_once runs
    it, reject_once is a tool result saying it was rejected, and the turn goes on."""
    async with open_acp(daemon) as (conn, recorder, _process):
        await initialized(conn)
        workdir = daemon.root / "project"
        workdir.mkdir(exist_ok=True)
        sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[])).session_id
        recorder.answers = ["allow_once", "reject_once"]
        for text in ('/tool mcp__ev__echo {"message": "via acp"}', '/tool mcp__ev__get-sum {"a": 40, "b": 2}'):
            answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), TIMEOUT)
            assert answer.stop_reason == "end_turn"
        starts = recorder.of(sid, ToolCallStart)
        assert [p[1].tool_call_id for p in recorder.permissions] == [s.tool_call_id for s in starts]
        assert any("mcp__ev__echo" in s.title for s in starts) and any("mcp__ev__get-sum" in s.title for s in starts)
        results = [u for u in recorder.of(sid, ToolCallProgress) if u.status in ("completed", "failed")]
        assert [r.status for r in results] == ["completed", "failed"], results
        assert "Echo: via acp" in str(results[0].raw_output)
        assert "rejected" in str(results[1].raw_output) and "42" not in str(results[1].raw_output)
        assert "mcp__ev__get-sum returned:" in recorder.text(sid)
