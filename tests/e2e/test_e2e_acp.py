"""`zeroclaw acp` driven by the ACP Python SDK's own client (SPEC §19, R-EDIT-1..6).

Every test starts a real daemon (offline `scripted` provider) and spawns `zeroclaw acp --config-dir DIR` with the
SDK's `spawn_agent_process`; every update is parsed by the SDK's models (`acp.schema`), and the raw frames are
checked against what the SDK parsed, so an update the SDK would drop cannot pass unnoticed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ImageContentBlock,
    ResourceContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from acp_harness import KINDS, TIMEOUT, initialized, open_acp
from e2e_harness import Daemon, DaemonFactory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """\
[tools]
approval_timeout_secs = 30
ask_timeout_secs = 30
bash_timeout_secs = 20

[limits]
max_prompt_chars = 4000000

[agents.default]
provider = "scripted"

[agents.second]
provider = "scripted"
"""

DEFAULT_GATEWAY_PORT = 42617  # [gateway] port's default (docs/config.md)


@contextmanager
def occupied_port() -> Iterator[int]:
    """A port held open (listening) for the block, so nothing else can bind it."""
    with socket.create_server(("127.0.0.1", 0)) as holder:
        yield holder.getsockname()[1]


VERSION_1_CAPABILITIES = {
    "loadSession": True,
    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
    "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}},
}


@pytest.fixture
def acp_daemon(daemon_factory: DaemonFactory) -> Daemon:
    return daemon_factory.start(CONFIG)


def workdir(daemon: Daemon) -> str:
    path = daemon.root / "project"
    path.mkdir(exist_ok=True)
    return str(path)


async def prompt(conn: Any, sid: str, text: str, timeout: float = TIMEOUT) -> str:
    answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), timeout)
    return str(answer.stop_reason)


def check_all_parsed(recorder: Any) -> None:
    """Every raw `session/update` reached the client as one of the SDK's models (none dropped as invalid)."""
    raw = recorder.raw_updates()
    parsed = [u for sid, u in recorder.updates if not sid.startswith("_")]
    assert len(raw) == len(parsed), (len(raw), len(parsed))
    assert all(isinstance(u, KINDS) for u in parsed), parsed


# ---------------------------------------------------------------------------------------- initialize


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EDIT-2")
@pytest.mark.parametrize("version", [1, 2])
async def test_initialize_answers_version_1_with_honest_capabilities(acp_daemon: Daemon, version: int) -> None:
    async with open_acp(acp_daemon) as (conn, _recorder, _process):
        answer = await initialized(conn, version)
        assert answer.protocol_version == 1
        caps = answer.agent_capabilities.model_dump(by_alias=True, exclude_none=True)
        for key, value in VERSION_1_CAPABILITIES.items():
            assert caps[key] == value, (key, caps)
        assert answer.auth_methods == []
        assert answer.agent_info is not None and answer.agent_info.name == "zeroclaw"


# ---------------------------------------------------------------------------------------- a turn


@pytest.mark.req("R-EDIT-3")
@pytest.mark.req("R-EDIT-5")
async def test_new_and_prompt_end_turn_every_update_parsed(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        new = await asyncio.wait_for(conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[]), TIMEOUT)
        sid = new.session_id
        options = [o.model_dump(by_alias=True) for o in new.config_options or []]
        assert options and options[0]["id"] == "agent" and options[0]["currentValue"] == "default", options
        assert {o["value"] for o in options[0]["options"]} == {"default", "second"}
        assert await prompt(conn, sid, "hello there") == "end_turn"
        assert recorder.text(sid) == "You said: «hello there»"
        assert await prompt(conn, sid, "/think it over") == "end_turn"
        thoughts = recorder.of(sid, AgentThoughtChunk)
        assert [t.content.text for t in thoughts] == ["it over"]
        check_all_parsed(recorder)


@pytest.mark.req("R-EDIT-3")
async def test_prompt_content_blocks(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        link = ResourceContentBlock(type="resource_link", uri="file:///x/a.py", name="a.py")
        embedded = {"type": "resource", "resource": {"uri": "file:///x/b.py", "text": "print(1)"}}
        answer = await conn.prompt(session_id=sid, prompt=[text_block("look"), link, embedded])  # type: ignore[list-item]
        assert answer.stop_reason == "end_turn"
        said = recorder.text(sid)
        assert "[a.py](file:///x/a.py)" in said and '<context uri="file:///x/b.py">' in said and "print(1)" in said
        image = ImageContentBlock(type="image", data="AAAA", mime_type="image/png")
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=sid, prompt=[image])
        assert refused.value.code == -32602


# ---------------------------------------------------------------------------------------- permissions


@pytest.mark.req("R-EDIT-5")
async def test_permission_granted_rejected_and_unknown_option(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        recorder.answers = ["allow_once", "reject_once", "no_such_option"]
        assert await prompt(conn, sid, "/bash echo granted") == "end_turn"
        assert await prompt(conn, sid, "/bash echo rejected") == "end_turn"
        assert await prompt(conn, sid, "/bash echo unknown") == "end_turn"
        starts = recorder.of(sid, ToolCallStart)
        results = recorder.of(sid, ToolCallProgress)
        assert [s.kind for s in starts] == ["execute"] * 3
        assert [s.title for s in starts] == ["echo granted", "echo rejected", "echo unknown"]
        assert [r.status for r in results] == ["completed", "failed", "failed"]
        assert "granted" in (results[0].raw_output or "")
        asked = recorder.permissions
        assert [p[1].tool_call_id for p in asked] == [s.tool_call_id for s in starts]
        assert [o.option_id for o in asked[0][2]] == ["allow_once", "allow_always", "reject_once", "reject_always"]
        check_all_parsed(recorder)


@pytest.mark.req("R-GUARD-3")
async def test_reject_always_and_allow_always_last_for_the_session(acp_daemon: Daemon) -> None:
    """ACP's `reject_always` / `allow_always` options map to the session scope: the tool is not asked about again."""
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        rejecting = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        allowing = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        recorder.answers = ["reject_always", "allow_always"]
        assert await prompt(conn, rejecting, "/bash echo first") == "end_turn"
        assert await prompt(conn, rejecting, "/bash echo second") == "end_turn"  # rejected without asking
        assert await prompt(conn, allowing, "/bash echo third") == "end_turn"
        assert await prompt(conn, allowing, "/bash echo fourth") == "end_turn"  # allowed without asking
        assert len(recorder.permissions) == 2
        rejected = recorder.of(rejecting, ToolCallProgress)
        assert [r.status for r in rejected] == ["failed", "failed"]
        assert "rest of this session" in (rejected[1].raw_output or "")
        allowed = recorder.of(allowing, ToolCallProgress)
        assert [r.status for r in allowed] == ["completed", "completed"] and "fourth" in (allowed[1].raw_output or "")
        check_all_parsed(recorder)


@pytest.mark.req("R-EDIT-4")
async def test_cancel_withdraws_a_pending_permission_and_the_tool_never_runs(acp_daemon: Daemon) -> None:
    marker = Path(workdir(acp_daemon)) / "ran"
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        recorder.hold = asyncio.Event()  # the editor never answers
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(f"/bash touch {marker}")]))
        await asyncio.wait_for(recorder.asked.wait(), TIMEOUT)
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(turn, TIMEOUT)
        assert answer.stop_reason == "cancelled"
        withdrawn = await recorder.wait(
            lambda: [m for d, m in recorder.frames if d == "incoming" and m.get("method") == "$/cancel_request"],
            "$/cancel_request",
        )
        asked = [m for d, m in recorder.frames if d == "incoming" and m.get("method") == "session/request_permission"]
        assert withdrawn[0]["params"]["requestId"] == asked[0]["id"]
        recorder.hold.set()
        await asyncio.sleep(0.3)  # a window in which a late "allow" would have run the tool: it must not
        assert not marker.exists()
        assert await prompt(conn, sid, "after") == "end_turn"


# ---------------------------------------------------------------------------------------- cancel


@pytest.mark.req("R-EDIT-4")
async def test_cancel_mid_turn_then_a_new_prompt(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        other = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("/sleep 20")]))
        await recorder.wait(lambda: recorder.of(sid, AgentMessageChunk), "the first chunk")
        assert await prompt(conn, other, "meanwhile") == "end_turn"  # another session is not held up
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(turn, 5)
        assert answer.stop_reason == "cancelled"
        assert await prompt(conn, sid, "again") == "end_turn"
        assert recorder.text(sid).endswith("You said: «again»")


@pytest.mark.req("R-EDIT-4")
async def test_cancel_when_idle_is_a_no_op(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, _recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        await conn.cancel(session_id=sid)
        await conn.cancel(session_id="s_never_made")
        assert await prompt(conn, sid, "still fine") == "end_turn"


# ---------------------------------------------------------------------------------------- errors, limits


@pytest.mark.req("R-EDIT-3")
async def test_unknown_session_is_32002(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, _recorder, _process):
        await initialized(conn)
        for call in (
            conn.prompt(session_id="s_unknown", prompt=[text_block("hi")]),
            conn.load_session(cwd=workdir(acp_daemon), session_id="s_unknown", mcp_servers=[]),
            conn.resume_session(cwd=workdir(acp_daemon), session_id="s_unknown"),
        ):
            with pytest.raises(RequestError) as refused:
                await asyncio.wait_for(call, TIMEOUT)
            assert refused.value.code == -32002
        with pytest.raises(RequestError) as unknown:
            await conn.ext_method("_zeroclaw/nothing", {})
        assert unknown.value.code == -32601


@pytest.mark.req("R-EDIT-6")
async def test_a_2_mib_prompt(acp_daemon: Daemon) -> None:
    text = "x" * (2 * 1024 * 1024)
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        assert await prompt(conn, sid, text, timeout=60) == "end_turn"
        assert recorder.text(sid) == f"You said: «{text}»"


# ---------------------------------------------------------------------------------------- sessions


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EDIT-3")
async def test_list_then_load_from_a_second_process_replays_history(acp_daemon: Daemon) -> None:
    cwd = workdir(acp_daemon)
    async with open_acp(acp_daemon) as (conn, _recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        assert await prompt(conn, sid, "first words") == "end_turn"
        assert await prompt(conn, sid, "/bash echo tool") == "end_turn"
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)
        listed = await conn.list_sessions(cwd=cwd)
        entry = next(s for s in listed.sessions if s.session_id == sid)
        assert entry.cwd == cwd and entry.title == "first words" and entry.updated_at
        elsewhere = await conn.list_sessions(cwd="/nowhere")
        assert all(s.session_id != sid for s in elsewhere.sessions)
        loaded = await asyncio.wait_for(conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[]), TIMEOUT)
        # Replayed before the answer: all there the moment load returns.
        kinds = [type(u) for u in recorder.of(sid)]
        assert kinds[0] is UserMessageChunk and ToolCallStart in kinds and ToolCallProgress in kinds, kinds
        assert "You said: «first words»" in recorder.text(sid)
        assert loaded is not None
        check_all_parsed(recorder)
        assert await prompt(conn, sid, "continued") == "end_turn"
    # The same session on the native socket.
    native = await acp_daemon.client()
    page = await native.call("session/list", {})
    assert sid in [s["sessionId"] for s in page["sessions"]]
    await native.close()


@pytest.mark.req("R-EDIT-3")
async def test_list_pages_with_cursors_resume_close(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    cwd = workdir(daemon)
    async with open_acp(daemon) as (conn, _recorder, _process):
        await initialized(conn)
        made = [(await conn.new_session(cwd=cwd, mcp_servers=[])).session_id for _ in range(55)]
        first = await conn.list_sessions()
        assert len(first.sessions) == 50 and first.next_cursor
        second = await conn.list_sessions(cursor=first.next_cursor)
        seen = {s.session_id for s in first.sessions} | {s.session_id for s in second.sessions}
        assert set(made) <= seen and second.next_cursor is None
        assert (await conn.resume_session(cwd=cwd, session_id=made[0])).model_dump(exclude_none=True) == {}
        assert (await conn.close_session(session_id=made[1])).model_dump(exclude_none=True) == {}


@pytest.mark.req("R-EDIT-3")
async def test_set_config_option_switches_the_agent(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, _recorder, _process):
        await initialized(conn)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        answer = await conn.set_config_option(config_id="agent", session_id=sid, value="second")
        assert answer is not None
        option = answer.config_options[0].model_dump(by_alias=True)
        assert option["currentValue"] == "second"
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id="agent", session_id=sid, value="nobody")
        assert refused.value.code == -32602
        assert await prompt(conn, sid, "on the second agent") == "end_turn"


@pytest.mark.req("R-EDIT-5")
async def test_questions_only_for_clients_with_forms(acp_daemon: Daemon) -> None:
    async with open_acp(acp_daemon) as (conn, recorder, _process):
        await initialized(conn)  # no elicitation capability: the question fails at once
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        assert await prompt(conn, sid, "/ask what now?", timeout=5) == "end_turn"
        assert [m for d, m in recorder.frames if m.get("method") == "elicitation/create"] == []
        # issue 38 §5.8: the editor is attached; it is told that it cannot answer, not that nobody is there
        said = json.dumps([m for d, m in recorder.frames if d == "incoming"])
        assert "the attached client cannot answer questions" in said and "no interactive client" not in said, said
    async with open_acp(acp_daemon, unstable=True) as (conn, recorder, _process):
        form = ElicitationCapabilities(form=ElicitationFormCapabilities())
        await initialized(conn, elicitation=form)
        sid = (await conn.new_session(cwd=workdir(acp_daemon), mcp_servers=[])).session_id
        recorder.form_answer = {"answer": "tomorrow"}
        assert await prompt(conn, sid, "/ask what now?") == "end_turn"
        asked = [m for d, m in recorder.frames if m.get("method") == "elicitation/create"]
        assert asked[0]["params"]["sessionId"] == sid and asked[0]["params"]["mode"] == "form"
        assert asked[0]["params"]["requestedSchema"]["properties"]["answer"]["type"] == "string"
        assert recorder.text(sid).endswith("Answer: «tomorrow»"), recorder.text(sid)


# ---------------------------------------------------------------------------------------- bad input


async def _line(process: asyncio.subprocess.Process) -> dict[str, Any]:
    import json

    assert process.stdout is not None
    return json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT))


async def _send(process: asyncio.subprocess.Process, frame: dict[str, Any] | bytes) -> None:
    import json

    assert process.stdin is not None
    process.stdin.write(frame if isinstance(frame, bytes) else json.dumps(frame).encode() + b"\n")
    await process.stdin.drain()


async def _bridge(daemon: Daemon) -> asyncio.subprocess.Process:
    from e2e_harness import zeroclaw_command

    return await asyncio.create_subprocess_exec(
        *zeroclaw_command(),
        "acp",
        "--config-dir",
        str(daemon.config_dir),
        env=daemon.env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EDIT-2")
async def test_non_acp_line_gets_an_error_and_the_bridge_keeps_running(acp_daemon: Daemon) -> None:
    process = await _bridge(acp_daemon)
    try:
        await _send(process, b"this is not json\n")
        assert (await _line(process))["error"]["code"] == -32700
        await _send(process, INIT)
        assert (await _line(process))["result"]["protocolVersion"] == 1
        await _send(process, {**INIT, "id": 2})
        assert (await _line(process))["error"]["code"] == -32600  # a second initialize
        assert process.returncode is None
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0


@pytest.mark.req("R-EDIT-1")
async def test_daemon_gone_mid_turn_fails_the_prompt_and_the_bridge_exits(acp_daemon: Daemon) -> None:
    process = await _bridge(acp_daemon)
    await _send(process, INIT)
    await _line(process)
    cwd = workdir(acp_daemon)
    await _send(process, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})
    sid = (await _line(process))["result"]["sessionId"]
    turn = {"sessionId": sid, "prompt": [{"type": "text", "text": "/sleep 30"}]}
    await _send(process, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": turn})
    while "error" not in (line := await _line(process)) and line.get("method") == "session/update":
        if line["params"]["update"]["sessionUpdate"] == "agent_message_chunk":
            break
    os.kill(acp_daemon.pid, signal.SIGKILL)
    loop = asyncio.get_running_loop()
    killed = loop.time()
    while (line := await _line(process)).get("id") != 3:
        pass
    assert line["error"]["code"] == -32603 and loop.time() - killed < 2, line
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 1
    assert process.stderr is not None
    err = (await process.stderr.read()).decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zeroclaw acp:"), err


@pytest.mark.req("R-EDIT-1")
@pytest.mark.req("R-EPH-3")
async def test_acp_starts_an_ephemeral_daemon_when_none_runs(daemon_factory: DaemonFactory) -> None:
    with occupied_port() as port:  # the port its config names is taken (another daemon's, say)
        daemon = daemon_factory.start(f"{CONFIG}\n[gateway]\nport = {port}\n")
        daemon.stop()  # its config dir stays, nothing serves it
        async with open_acp(daemon) as (conn, _recorder, _process):
            answer = await initialized(conn)
            assert answer.protocol_version == 1
            sid = (await conn.new_session(cwd=workdir(daemon), mcp_servers=[])).session_id
            assert await prompt(conn, sid, "started for me") == "end_turn"


@pytest.mark.req("R-EPH-3")
async def test_acp_started_daemon_takes_a_free_port_when_the_default_one_is_taken(
    daemon_factory: DaemonFactory,
) -> None:
    """The default gateway port (42617) held by someone else, as when another config dir's daemon runs: the bridge's
    daemon comes up anyway. Skipped only when this test cannot take the port itself (then someone else has it, and
    the test above covers a taken port)."""
    daemon = daemon_factory.start(CONFIG)
    daemon.stop()
    try:
        holder = socket.create_server(("127.0.0.1", DEFAULT_GATEWAY_PORT))
    except OSError:
        pytest.skip(f"port {DEFAULT_GATEWAY_PORT} is taken by another process; the test above covers a taken port")
    with holder:
        process = await _bridge(daemon)
        await _send(process, INIT)
        assert (await _line(process))["result"]["protocolVersion"] == 1
        assert process.stdin is not None
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
        assert process.stderr is not None
        assert (await process.stderr.read()) == b""


@pytest.mark.req("R-EPH-3")
async def test_two_editors_starting_at_once_share_one_daemon(daemon_factory: DaemonFactory) -> None:
    """Two bridges with no daemon running each start one; the one that loses the endpoint's lock says so and
    exits, and its bridge connects to the winner instead of failing."""
    daemon = daemon_factory.start(CONFIG)
    daemon.stop()
    first, second = await _bridge(daemon), await _bridge(daemon)
    for process in (first, second):
        await _send(process, INIT)
    for process in (first, second):
        assert (await _line(process))["result"]["protocolVersion"] == 1
        assert process.stdin is not None
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
        assert process.stderr is not None
        assert (await process.stderr.read()) == b""


@pytest.mark.req("R-EPH-3")
async def test_acp_prints_the_line_of_a_daemon_that_cannot_start(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    daemon.stop()
    assert daemon.config_dir is not None
    (daemon.config_dir / "config.toml").write_text("[limits]\nmax_sessions = -1\n")  # the daemon refuses it
    process = await _bridge(daemon)
    await _send(process, INIT)
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 1
    assert process.stdout is not None and process.stderr is not None
    assert (await process.stdout.read()) == b""
    err = (await process.stderr.read()).decode().strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("zeroclaw acp: no daemon was running, and the one started did not start: ")
    assert "zeroclaw daemon: " in err[0] and "max_sessions" in err[0], err


@pytest.mark.req("R-EPH-3")
async def test_acp_prints_the_line_of_a_daemon_that_fails_after_taking_the_connection(
    daemon_factory: DaemonFactory,
) -> None:
    """The gateway starts after the local socket, and fails here (its TLS files are missing): the bridge may have
    connected before the daemon went away. Its line, not a `ConnectionResetError` traceback."""
    daemon = daemon_factory.start(CONFIG)
    daemon.stop()
    assert daemon.config_dir is not None
    with (daemon.config_dir / "config.toml").open("a") as config:
        config.write('\n[gateway]\nport = 0\ntls_cert = "/nonexistent.pem"\ntls_key = "/nonexistent.key"\n')
    process = await _bridge(daemon)
    await _send(process, INIT)
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 1
    assert process.stderr is not None
    err = (await process.stderr.read()).decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zeroclaw acp: "), err
    assert "zeroclaw daemon: cannot load the gateway TLS certificate" in err[0], err
