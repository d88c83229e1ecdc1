"""Turn streaming, approvals and elicitation over a real socket (R-STREAM-1..3, R-BIDI-2..5, R-AGENT-2 scripted).

Every turn is checked against the same invariants (`check_turn`): the updates all belong to the session,
`turn_complete` is the last one and agrees with the `session/prompt` result, and the concatenated
`agent_message_chunk` texts equal the final `content`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import NO_ANSWER, Peer, check_turn, chunks_text, new_sid
from waiting import until

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

ASK_TIMEOUT = 2.5
APPROVAL_TIMEOUT = 1.5

CONFIG = f"""\
[tools]
ask_timeout_secs = {ASK_TIMEOUT}
approval_timeout_secs = {APPROVAL_TIMEOUT}
bash_timeout_secs = 40

[agents.auto]
auto_approve = ["bash"]
"""


@pytest.fixture(scope="module")
def stream_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


def marker_path() -> Path:
    return Path("/tmp") / f"zc-e2e-must-not-exist-{uuid.uuid4().hex}"


# ------------------------------------------------------------------------------------ plain directives


@pytest.mark.req("R-STREAM-1")
@pytest.mark.req("R-STREAM-2")
@pytest.mark.req("R-AGENT-2")
async def test_plain_text_streams_in_chunks(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "  the quick brown fox jumps  ")
        result = check_turn(turn, sid)
        assert result["content"] == "You said: «the quick brown fox jumps»"
        assert 3 <= len(turn.of_type("agent_message_chunk")) <= 8, turn.types
        assert set(turn.types) == {"agent_message_chunk", "usage", "turn_complete"}


@pytest.mark.req("R-STREAM-1")
async def test_think_emits_a_thought_chunk(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "/think weighing the options")
        result = check_turn(turn, sid)
        assert chunks_text(turn.updates, "agent_thought_chunk") == "weighing the options"
        assert result["content"] == "I have thought it over."
        first_text = turn.types.index("agent_message_chunk")
        assert turn.types.index("agent_thought_chunk") < first_text
        # hidden reasoning is not part of the visible answer
        assert "weighing" not in result["content"]


@pytest.mark.req("R-STREAM-2")
async def test_fail_is_a_failed_turn_not_an_rpc_error(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "/fail")
        result = check_turn(turn, sid, stop="failed")
        assert "scripted provider failure" in result["content"], result
        # the session is still usable
        check_turn(await owner.prompt(sid, "still alive"), sid)


@pytest.mark.req("R-STREAM-2")
@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("/sleep 0.3", None),
        ("/nope not a directive", "You said: «/nope not a directive»"),
        ("/bashls", "You said: «/bashls»"),
        ("/bash", "Usage"),
        ("/poll only | one", "Usage"),
        ("/sleep x", "Usage"),
    ],
)
async def test_other_directives_keep_the_invariants(stream_daemon: Daemon, prompt: str, expected: str | None) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, prompt)
        result = check_turn(turn, sid)
        assert "tool_call" not in turn.types
        if expected is not None:
            assert expected in result["content"], result
        else:
            assert result["content"].startswith("Sleeping for") and result["content"].endswith(" Done."), result


@pytest.mark.req("R-STREAM-1")
@pytest.mark.req("R-STREAM-2")
@pytest.mark.req("R-ACP-4")
async def test_stream_sends_one_update_per_chunk_and_stores_the_text_once(stream_daemon: Daemon) -> None:
    # `/stream` hands the turn whole bursts of chunks; each must still be its own update, in order.
    count = 1000
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, f"/stream {count}")
        result = check_turn(turn, sid)
        assert turn.types == ["agent_message_chunk"] * count + ["usage", "turn_complete"]  # one usage per step
        assert all(u["text"] == "lorem " for u in turn.of_type("agent_message_chunk"))
        assert result["content"] == "lorem " * count
        stored = await owner.call("session/messages", {"sessionId": sid, "limit": 10})
        assistant = [m["content"] for m in stored["messages"] if m["role"] == "assistant"]
        assert assistant == ["lorem " * count], assistant


@pytest.mark.req("R-LIM")
@pytest.mark.req("R-STREAM-2")
async def test_stream_to_a_client_that_stops_reading_stays_bounded_and_loses_nothing(
    daemon_factory: DaemonFactory,
) -> None:
    # 200,000 chunks are ~20 MB of frames: a daemon that did not wait for the reader would hold them all.
    count, buffer_limit = 200_000, 65_536
    daemon = daemon_factory.start({"limits": {"max_outbound_buffer_bytes": buffer_limit}})
    async with await daemon.client() as client:
        sid = (await client.call("session/new", {}))["sessionId"]
        baseline = daemon.proc_status("VmRSS")
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": "p",
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": f"/stream {count}"},
            }
        )
        client.writer.transport.pause_reading()  # asyncio would otherwise read ahead into its own buffer
        await asyncio.sleep(1.5)  # not reading: the daemon must stop producing, not buffer
        growth = daemon.proc_status("VmRSS") - baseline
        client.writer.transport.resume_reading()
        assert growth < 12 * 1024 * 1024, f"daemon RSS grew by {growth / 2**20:.1f} MiB while the client did not read"
        chunks = 0
        while True:
            frame = await client.recv(timeout=30)
            if frame.get("id") == "p":
                break
            params = frame["params"]
            if params["type"] == "agent_message_chunk":
                assert params["text"] == "lorem "
                chunks += 1
            else:
                assert params["type"] in ("usage", "turn_complete")
        assert chunks == count
        assert frame["result"]["content"] == "lorem " * count


# -------------------------------------------------------------------------------------------- approvals


@pytest.mark.req("R-STREAM-3")
async def test_bash_allow_once(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        command = "echo approved-$((40 + 2))"
        mark, fut = await owner.start_prompt(sid, f"/bash {command}")
        request = await owner.wait_update("approval_request", session_id=sid, start=mark)
        assert request["toolName"] == "bash"
        assert request["arguments"] == {"command": command}
        assert request["timeoutSecs"] == APPROVAL_TIMEOUT
        ack = await owner.call(
            "session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "allow_once"}
        )
        assert ack == {"sessionId": sid, "requestId": request["requestId"], "acknowledged": True}
        turn = await owner.finish_turn(sid, mark, fut)
        result = check_turn(turn, sid)
        # the step that asked for the tool ends with its usage (R-MODEL-5), then the tool runs
        assert turn.types[:5] == ["usage", "tool_call", "approval_request", "approval_resolved", "tool_result"], (
            turn.types
        )
        _usage, call, _, resolved, tool_result = turn.updates[:5]
        assert resolved["requestId"] == request["requestId"] and resolved["decision"] == "allow_once"
        assert call["name"] == "bash" and call["rawInput"] == {"command": command}
        assert "approved-42" in tool_result["rawOutput"] and "[exit code 0]" in tool_result["rawOutput"]
        assert result["content"].startswith("Command output:\n") and "approved-42" in result["content"]
        # the request is settled: an answer to it now is told it came late (R-MULTI-3)
        late = await owner.call(
            "session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "allow_once"}
        )
        assert late["acknowledged"] is False
        # allow_once covers one call only
        mark, fut = await owner.start_prompt(sid, "/bash echo once-more")
        again = await owner.wait_update("approval_request", session_id=sid, start=mark)
        await owner.call("session/approve", {"sessionId": sid, "requestId": again["requestId"], "decision": "reject"})
        check_turn(await owner.finish_turn(sid, mark, fut), sid)


@pytest.mark.req("R-STREAM-3")
async def test_bash_reject_is_not_run_and_the_turn_goes_on(stream_daemon: Daemon) -> None:
    marker = marker_path()
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        mark, fut = await owner.start_prompt(sid, f"/bash touch {marker}")
        request = await owner.wait_update("approval_request", session_id=sid, start=mark)
        await owner.call("session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "reject"})
        turn = await owner.finish_turn(sid, mark, fut)
        check_turn(turn, sid, stop="end_turn")
        (tool_result,) = turn.of_type("tool_result")
        assert "reject" in tool_result["rawOutput"].lower(), tool_result
        assert not marker.exists(), "a rejected command was run"


@pytest.mark.req("R-STREAM-3")
async def test_bash_allow_always_covers_the_rest_of_the_session(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        mark, fut = await owner.start_prompt(sid, "/bash echo first-call")
        request = await owner.wait_update("approval_request", session_id=sid, start=mark)
        await owner.call(
            "session/approve", {"sessionId": sid, "requestId": request["requestId"], "decision": "allow_always"}
        )
        check_turn(await owner.finish_turn(sid, mark, fut), sid)
        turn = await owner.prompt(sid, "/bash echo second-call")
        check_turn(turn, sid)
        assert "approval_request" not in turn.types, turn.types
        assert "second-call" in turn.of_type("tool_result")[0]["rawOutput"]
        # ...but only for that session
        other = await new_sid(owner)
        mark, fut = await owner.start_prompt(other, "/bash echo other-session")
        request = await owner.wait_update("approval_request", session_id=other, start=mark)
        await owner.call(
            "session/approve", {"sessionId": other, "requestId": request["requestId"], "decision": "reject"}
        )
        check_turn(await owner.finish_turn(other, mark, fut), other)


@pytest.mark.req("R-STREAM-3")
async def test_no_approval_in_time_is_a_reject(stream_daemon: Daemon) -> None:
    marker = marker_path()
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        started = time.monotonic()
        mark, fut = await owner.start_prompt(sid, f"/bash touch {marker}")
        await owner.wait_update("approval_request", session_id=sid, start=mark)
        turn = await owner.finish_turn(sid, mark, fut, timeout=APPROVAL_TIMEOUT + 5)
        elapsed = time.monotonic() - started
        check_turn(turn, sid, stop="end_turn")
        assert APPROVAL_TIMEOUT * 0.9 <= elapsed <= APPROVAL_TIMEOUT + 3, elapsed
        (tool_result,) = turn.of_type("tool_result")
        assert "reject" in tool_result["rawOutput"].lower(), tool_result
        assert not marker.exists()


@pytest.mark.req("R-STREAM-3")
@pytest.mark.req("R-AGENT-1")
@pytest.mark.req("R-CFG-4")
async def test_auto_approve_lifts_approval(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner, agentAlias="auto")
        turn = await owner.prompt(sid, "/bash echo auto-$((6 * 7))")
        check_turn(turn, sid)
        assert turn.types[:3] == ["usage", "tool_call", "tool_result"], turn.types
        assert "auto-42" in turn.of_type("tool_result")[0]["rawOutput"]
        # set at run time through config/set, it applies to the next turn
        await owner.call("config/set", {"prop": "agents.runtime.auto_approve", "value": ["bash"]})
        try:
            rsid = await new_sid(owner, agentAlias="runtime")
            turn = await owner.prompt(rsid, "/bash echo runtime-ok")
            check_turn(turn, rsid)
            assert "approval_request" not in turn.types and "runtime-ok" in turn.of_type("tool_result")[0]["rawOutput"]
            await owner.call("config/set", {"prop": "agents.runtime.auto_approve", "value": []})
            mark, fut = await owner.start_prompt(rsid, "/bash echo now-asks")
            request = await owner.wait_update("approval_request", session_id=rsid, start=mark)
            await owner.call(
                "session/approve", {"sessionId": rsid, "requestId": request["requestId"], "decision": "allow_once"}
            )
            check_turn(await owner.finish_turn(rsid, mark, fut), rsid)
            await owner.call("session/close", {"sessionId": rsid})
        finally:
            await owner.call("config/delete", {"prop": "agents.runtime"})


# ------------------------------------------------------------------------------------------ elicitation


def accept(content: dict[str, Any]) -> Any:
    def answer(frame: dict[str, Any]) -> Any:
        return {"action": "accept", "content": content}

    return answer


@pytest.mark.req("R-BIDI-5")
@pytest.mark.req("R-BIDI-2")
async def test_ask_answered(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon, elicitation=True, answer=accept({"answer": "cerulean blue"})) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "/ask What is your favourite colour?")
        result = check_turn(turn, sid)
        (request,) = owner.daemon_requests
        assert request["id"] == "zc-out-0", request  # the first outbound request on this connection
        assert request["method"] == "elicitation/create"
        params = request["params"]
        assert params["sessionId"] == sid and params["mode"] == "form"
        assert params["message"] == "What is your favourite colour?"
        schema = params["requestedSchema"]
        assert schema["type"] == "object" and schema["required"] == ["answer"]
        assert schema["properties"]["answer"]["type"] == "string"
        call = turn.of_type("tool_call")[0]
        assert call["name"] == "ask_user" and call["rawInput"] == {"question": "What is your favourite colour?"}
        assert "approval_request" not in turn.types
        assert "cerulean blue" in turn.of_type("tool_result")[0]["rawOutput"]
        assert result["content"] == "Answer: «cerulean blue»"
        # the next question on this connection is zc-out-1
        check_turn(await owner.prompt(sid, "/ask Again?"), sid)
        assert [r["id"] for r in owner.daemon_requests] == ["zc-out-0", "zc-out-1"]


@pytest.mark.req("R-BIDI-5")
@pytest.mark.req("R-BIDI-3")
@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ({"result": {"action": "decline"}}, ("declined",)),
        ({"result": {"action": "cancel"}}, ("cancel",)),
        ({"error": {"code": -32000, "message": "client refused"}}, ("fail",)),
        ({"result": None}, ("fail", "no answer", "invalid", "not a valid")),
    ],
    ids=["decline", "cancel", "error", "null_result"],
)
async def test_ask_declined_cancelled_or_failed(
    stream_daemon: Daemon, reply: dict[str, Any], words: tuple[str, ...]
) -> None:
    async with await Peer.open(stream_daemon, elicitation=True) as owner:
        sid = await new_sid(owner)
        started = time.monotonic()
        mark, fut = await owner.start_prompt(sid, "/ask Shall we?")
        request = await owner.wait_daemon_request()
        if "error" in reply:
            await owner.respond(request["id"], error=reply["error"])
        else:
            await owner.respond(request["id"], reply["result"])
        turn = await owner.finish_turn(sid, mark, fut)
        check_turn(turn, sid)
        assert time.monotonic() - started < ASK_TIMEOUT, "an answer must settle the question at once"
        raw = turn.of_type("tool_result")[0]["rawOutput"]
        assert any(w in raw.lower() for w in words), raw
        assert "did not answer within" not in raw, raw


@pytest.mark.req("R-BIDI-4")
async def test_ask_never_answered_times_out(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon, elicitation=True, answer=lambda f: NO_ANSWER) as owner:
        sid = await new_sid(owner)
        started = time.monotonic()
        turn = await owner.prompt(sid, "/ask Anyone there?", timeout=ASK_TIMEOUT + 5)
        elapsed = time.monotonic() - started
        check_turn(turn, sid)
        assert ASK_TIMEOUT * 0.9 <= elapsed <= ASK_TIMEOUT + 3, elapsed
        raw = turn.of_type("tool_result")[0]["rawOutput"]
        assert "did not answer" in raw or "unanswered" in raw.lower(), raw
        # a late answer is an unknown id: ignored, never answered, the connection stays usable
        late_mark = len(owner.frames)
        await owner.respond(owner.daemon_requests[0]["id"], {"action": "accept", "content": {"answer": "late"}})
        assert (await owner.call("status"))["pid"] == stream_daemon.pid
        assert all("error" not in f for f in owner.frames[late_mark:]), owner.frames[late_mark:]


@pytest.mark.req("R-BIDI-5")
async def test_ask_without_elicitation_capability(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon, elicitation=False) as owner:
        sid = await new_sid(owner)
        started = time.monotonic()
        turn = await owner.prompt(sid, "/ask Is anybody listening?")
        check_turn(turn, sid)
        assert time.monotonic() - started < ASK_TIMEOUT
        assert owner.daemon_requests == [], "elicitation/create sent to a client that did not announce it"
        raw = turn.of_type("tool_result")[0]["rawOutput"]
        # issue 38 §5.8: a client is attached, one that cannot show a question: said so, not "nobody is there"
        assert raw == (
            "No answer: the attached client cannot answer questions (it did not announce the elicitation capability)."
        ), raw
        # same for /poll
        turn = await owner.prompt(sid, "/poll Pick one | red | green")
        check_turn(turn, sid)
        assert "the attached client cannot answer questions" in turn.of_type("tool_result")[0]["rawOutput"]


@pytest.mark.req("R-BIDI-4")
async def test_ask_client_disconnects_while_the_question_is_pending(stream_daemon: Daemon) -> None:
    asker = await Peer.open(stream_daemon, elicitation=True, answer=lambda f: NO_ANSWER)
    sid = await new_sid(asker)
    mark, _fut = await asker.start_prompt(sid, "/ask Will you stay?")
    await asker.wait_daemon_request()
    await asker.wait_update("tool_call", session_id=sid, start=mark)
    await asker.close()
    gone = time.monotonic()
    async with await Peer.open(stream_daemon) as second:

        async def settled_rows() -> list[dict[str, Any]] | None:
            rows: list[dict[str, Any]] = (await second.call("session/messages", {"sessionId": sid}))["messages"]
            done = rows and rows[-1]["role"] == "assistant" and any(r["role"] == "tool_result" for r in rows)
            return rows if done else None

        rows = await until(settled_rows, 5, interval=0.05, what="the turn's last row")
        settled = time.monotonic() - gone
        roles = [r["role"] for r in rows]
        assert roles == ["user", "tool_call", "tool_result", "assistant"], rows
        tool_result = rows[2]
        assert tool_result["name"] == "ask_user" and tool_result["toolCallId"] == rows[1]["toolCallId"]
        assert "did not answer within" not in tool_result["content"], "the pending question should fail at once"
        assert settled < ASK_TIMEOUT, f"the turn waited {settled:.2f} s for a disconnected client"
        assert rows[3]["content"].startswith("Answer: «"), rows[3]

        # The turn is over, so the session takes a new prompt. The final row is committed just before the turn
        # releases the session, so a prompt sent at once may still meet `session_busy` for a moment.
        async def not_busy() -> Any:
            turn = await second.prompt(sid, "I am back")
            return None if turn.response.get("error", {}).get("code") == -32002 else turn

        check_turn(await until(not_busy, ASK_TIMEOUT, interval=0.05, what="a prompt not met by session_busy"), sid)


@pytest.mark.req("R-BIDI-2")
async def test_client_request_with_id_zc_out_0_while_the_daemons_is_pending(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon, elicitation=True) as owner:
        asked = await new_sid(owner)
        other = await new_sid(owner)
        mark, ask_fut = await owner.start_prompt(asked, "/ask Shared id?")
        request = await owner.wait_daemon_request()
        assert request["id"] == "zc-out-0"
        # our own request with the very same id, in flight while the daemon's is pending
        own = await owner.start("session/prompt", {"sessionId": other, "prompt": "/sleep 0.5"}, id="zc-out-0")
        status = await owner.request("status", id="zc-out-status")
        assert "result" in status
        await owner.respond("zc-out-0", {"action": "accept", "content": {"answer": "both work"}})
        ask_turn = await owner.finish_turn(asked, mark, ask_fut)
        result = check_turn(ask_turn, asked)
        assert result["content"] == "Answer: «both work»"
        own_response = await asyncio.wait_for(own, 5)
        assert own_response["id"] == "zc-out-0"
        assert own_response["result"]["stopReason"] == "end_turn", own_response
        assert own_response["result"]["sessionId"] == other
        # exactly one response carried our id
        assert sum(1 for f in owner.frames if f.get("id") == "zc-out-0" and "method" not in f) == 1


@pytest.mark.req("R-BIDI-5")
async def test_poll_answered_with_choice_b(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon, elicitation=True, answer=accept({"choice": "Beta"})) as owner:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "/poll Which one? | Alpha | Beta")
        result = check_turn(turn, sid)
        (request,) = owner.daemon_requests
        params = request["params"]
        assert params["message"] == "Which one?" and params["mode"] == "form" and params["sessionId"] == sid
        schema = params["requestedSchema"]
        assert schema["required"] == ["choice"]
        assert schema["properties"]["choice"]["type"] == "string"
        assert schema["properties"]["choice"]["enum"] == ["Alpha", "Beta"]
        call = turn.of_type("tool_call")[0]
        assert call["name"] == "poll" and call["rawInput"] == {"question": "Which one?", "options": ["Alpha", "Beta"]}
        assert "Beta" in turn.of_type("tool_result")[0]["rawOutput"]
        assert result["content"] == "Choice: «Beta»"


# ------------------------------------------------------------------------------------------- cancelling


@pytest.mark.req("R-STREAM-2")
async def test_cancel_during_sleep_is_prompt(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        mark, fut = await owner.start_prompt(sid, "/sleep 5")
        await owner.wait_update("agent_message_chunk", session_id=sid, start=mark)  # "Sleeping for 5 s"
        cancelled_at = time.monotonic()
        assert await owner.call("session/cancel", {"sessionId": sid}) == {"sessionId": sid, "cancelled": True}
        turn = await owner.finish_turn(sid, mark, fut, timeout=5)
        assert time.monotonic() - cancelled_at < 2.0
        result = check_turn(turn, sid, stop="cancelled")
        assert result["content"].startswith("Sleeping for") and not result["content"].endswith("Done.")
        # cancelling an idle session is harmless
        assert await owner.call("session/cancel", {"sessionId": sid}) == {"sessionId": sid, "cancelled": True}
        check_turn(await owner.prompt(sid, "after the cancel"), sid)


def pgrep(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False, timeout=5)
    return out.stdout.split()


@pytest.mark.req("R-STREAM-2")
@pytest.mark.req("R-AGENT-3")
async def test_cancel_during_a_running_bash_kills_it(stream_daemon: Daemon) -> None:
    unique = f"30.{uuid.uuid4().int % 10**6:06d}"
    try:
        async with await Peer.open(stream_daemon) as owner:
            sid = await new_sid(owner, agentAlias="auto")
            mark, fut = await owner.start_prompt(sid, f"/bash sleep {unique}; echo never-printed")
            await owner.wait_update("tool_call", session_id=sid, start=mark)
            await until(lambda: pgrep(f"sleep {unique}"), 5, interval=0.05, what="the bash command to start")
            cancelled_at = time.monotonic()
            await owner.call("session/cancel", {"sessionId": sid})
            turn = await owner.finish_turn(sid, mark, fut, timeout=5)
            assert time.monotonic() - cancelled_at < 2.0
            check_turn(turn, sid, stop="cancelled")
            await until(lambda: not pgrep(f"sleep {unique}"), 2, interval=0.05, what=f"no process 'sleep {unique}'")
    finally:  # never leave a stray process behind, whatever the daemon did
        for pid in pgrep(f"sleep {unique}"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


# ------------------------------------------------------------------------------------------- watchers


@pytest.mark.req("R-STREAM-1")
@pytest.mark.req("R-STREAM-2")
async def test_a_watcher_of_the_same_principal_gets_the_same_updates(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as prompter, await Peer.open(stream_daemon) as watcher:
        sid = await new_sid(prompter)
        attached = await watcher.new_session(sessionId=sid)
        assert attached["resumed"] is True
        for prompt in ["watch this closely", "/think quietly"]:
            wmark = len(watcher.updates)
            turn = await prompter.prompt(sid, prompt)
            check_turn(turn, sid)
            await watcher.wait_update("turn_complete", session_id=sid, start=wmark)
            assert watcher.turn_updates(sid, wmark) == turn.updates
        # the watcher's own prompt reaches the first connection too
        pmark = len(prompter.updates)
        turn = await watcher.prompt(sid, "and back")
        check_turn(turn, sid)
        await prompter.wait_update("turn_complete", session_id=sid, start=pmark)
        assert prompter.turn_updates(sid, pmark) == turn.updates


@pytest.mark.req("R-STREAM-1")
async def test_a_watcher_attaching_mid_turn_gets_the_rest_of_it(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as prompter, await Peer.open(stream_daemon) as watcher:
        sid = await new_sid(prompter)
        mark, fut = await prompter.start_prompt(sid, "/sleep 1")
        await prompter.wait_update("agent_message_chunk", session_id=sid, start=mark)
        await watcher.new_session(sessionId=sid)
        turn = await prompter.finish_turn(sid, mark, fut)
        check_turn(turn, sid)
        last = await watcher.wait_update("turn_complete", session_id=sid, timeout=1)
        assert last == turn.updates[-1]
        seen = watcher.turn_updates(sid, 0)
        assert seen and seen == turn.updates[-len(seen) :], "the watcher's updates must be the turn's tail, in order"


# -------------------------------------------------------------------------------------------- context


@pytest.mark.req("R-AGENT-2")
async def test_context_lists_the_retained_messages(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        sid = await new_sid(owner)
        for prompt in ["alpha one", "beta two"]:
            check_turn(await owner.prompt(sid, prompt), sid)
        turn = await owner.prompt(sid, "/context")
        result = check_turn(turn, sid)
        assert result["content"].splitlines() == [
            "user: alpha one",
            "assistant: You said: «alpha one»",
            "user: beta two",
            "assistant: You said: «beta two»",
            "user: /context",
        ], result["content"]


@pytest.mark.req("R-ACP-1")
@pytest.mark.req("R-STREAM-1")
async def test_trimming_is_announced_and_visible_in_context(stream_daemon: Daemon) -> None:
    async with await Peer.open(stream_daemon) as owner:
        await owner.call("config/set", {"prop": "context.max_messages", "value": 3})
        try:
            sid = await new_sid(owner)
            trims: list[dict[str, Any]] = []
            for prompt in ["one", "two", "three"]:
                turn = await owner.prompt(sid, prompt)
                check_turn(turn, sid)
                trims += turn.of_type("history_trimmed")
            assert trims, "no history_trimmed although the context exceeded max_messages"
            assert all(t["droppedMessages"] >= 1 and t["keptMessages"] <= 3 for t in trims), trims
            turn = await owner.prompt(sid, "/context")
            lines = check_turn(turn, sid)["content"].splitlines()
            assert lines[-1] == "user: /context"
            full = ["user: one", "assistant: You said: «one»", "user: two", "assistant: You said: «two»"]
            full += ["user: three", "assistant: You said: «three»"]
            retained = lines[:-1]
            assert 1 <= len(retained) <= 3 and retained == full[-len(retained) :], lines
            # the visible transcript keeps every row
            assert (await owner.call("session/messages", {"sessionId": sid}))["total"] == 8
        finally:
            await owner.call("config/delete", {"prop": "context.max_messages"})
