"""Sessions followed from several clients (SPEC §18, R-MULTI-1..3) over the real socket.

Each test drives `zeroclaw daemon` as a subprocess: numbered updates that continue across restarts, attach with
replay (no gap, no duplicate), bad `afterSeq`s, approvals and questions that outlive the client that prompted,
cancel from another client, a watcher that stops reading, and SIGKILL during a turn two clients follow.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory, RawClient
from session_client import TOKEN_USER_CONFIG, Peer, check_turn, new_sid, open_token_peer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from crash_loop import markers, restart, transcript

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

APPROVAL_TIMEOUT = 6.0
CONFIG = f"""\
[tools]
approval_timeout_secs = {APPROVAL_TIMEOUT}
ask_timeout_secs = 8

[limits]
replay_events = 40
""" + TOKEN_USER_CONFIG


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    made = DaemonFactory()
    try:
        yield made.start(CONFIG)
    finally:
        made.close()


def seqs(updates: list[dict[str, Any]]) -> list[int]:
    return [u["seq"] for u in updates]


def of(peer: Peer, sid: str) -> list[dict[str, Any]]:
    return [u for u in peer.updates if u["sessionId"] == sid]


async def attach(peer: Peer, sid: str, after: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid}
    if after is not None:
        params["afterSeq"] = after
    return await peer.call("session/attach", params)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------------------- R-MULTI-1


@pytest.mark.req("R-MULTI-1")
async def test_updates_are_numbered_per_session_and_numbering_continues_after_a_restart(
    daemon_factory: DaemonFactory,
) -> None:
    first = daemon_factory.start(CONFIG)
    async with await Peer.open(first) as peer:
        sid, other = await new_sid(peer), await new_sid(peer)
        one = await peer.prompt(sid, "hello there")
        check_turn(one, sid)
        assert seqs(one.updates)[0] == 1
        check_turn(await peer.prompt(other, "another session"), other)  # numbered on its own
        two = await peer.prompt(sid, "and again")
        check_turn(two, sid)
        assert seqs(two.updates)[0] == seqs(one.updates)[-1] + 1
        last = seqs(two.updates)[-1]
        assert seqs(of(peer, other))[0] == 1
    first.stop(signal.SIGTERM)
    second = restart(daemon_factory, first)
    async with await Peer.open(second) as peer:
        attached = await attach(peer, sid, last)
        assert attached == {
            "sessionId": sid,
            "seq": last,
            "replayed": 0,
            "gap": False,
            "running": False,
            "turnStartSeq": None,
            "pendingApprovals": [],
        }
        three = await peer.prompt(sid, "after the restart")
        check_turn(three, sid)
        assert seqs(three.updates)[0] == last + 1  # a clean stop stores the exact last seq: no jump


# ----------------------------------------------------------------------------------------- R-MULTI-2


@pytest.mark.req("R-MULTI-2")
async def test_attach_replays_what_came_after_afterseq_then_streams_live_with_no_gap_or_duplicate(
    daemon: Daemon,
) -> None:
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as watcher:
        sid = await new_sid(owner)
        first = await owner.prompt(sid, "one two three four")
        check_turn(first, sid)
        numbers = seqs(first.updates)
        after = numbers[1]
        attached = await attach(watcher, sid, after)
        assert attached["replayed"] == len(numbers) - 2 and attached["gap"] is False
        assert attached["seq"] == numbers[-1] and attached["running"] is False
        assert [u["seq"] for u in of(watcher, sid)] == numbers[2:]  # replayed before the answer, in order
        assert of(watcher, sid) == first.updates[2:]
        # live from now on, whoever prompts; the watcher never prompted
        second = await owner.prompt(sid, "/sleep 0.3")
        check_turn(second, sid)
        await watcher.wait_for(lambda: seqs(of(watcher, sid))[-1] == seqs(second.updates)[-1])
        assert seqs(of(watcher, sid)) == list(range(numbers[2], seqs(second.updates)[-1] + 1))
        # detached: nothing more reaches it
        assert await watcher.call("session/detach", {"sessionId": sid}) == {"sessionId": sid, "detached": True}
        seen = len(watcher.updates)
        check_turn(await owner.prompt(sid, "not for the watcher"), sid)
        await watcher.call("status")
        assert len(watcher.updates) == seen


@pytest.mark.req("R-MULTI-2")
async def test_attach_during_a_turn_gets_each_update_once(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as watcher:
        sid = await new_sid(owner)
        mark, answer = await owner.start_prompt(sid, "/sleep 1.5")
        await owner.wait_for(lambda: len(owner.turn_updates(sid, mark)) >= 3)
        attached = await attach(watcher, sid, 0)  # everything retained, then live
        assert attached["running"] is True and attached["gap"] is False
        turn = await owner.finish_turn(sid, mark, answer)
        check_turn(turn, sid)
        await watcher.wait_update("turn_complete", session_id=sid)
        assert of(watcher, sid) == turn.updates  # the same updates, each once, in order


@pytest.mark.req("R-MULTI-2")
async def test_afterseq_older_than_what_is_retained_answers_gap(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as late:
        sid = await new_sid(owner)
        turn = await owner.prompt(sid, "/stream 100")  # more updates than `replay_events = 40`
        check_turn(turn, sid)
        attached = await attach(late, sid, 1)
        assert attached["gap"] is True and attached["replayed"] == 0
        assert attached["seq"] == seqs(turn.updates)[-1]
        assert of(late, sid) == []  # nothing partial: the client reloads the transcript instead
        # the retained tail is still replayed to whoever asks within it
        tail = await attach(late, sid, seqs(turn.updates)[-10])
        assert tail["gap"] is False and tail["replayed"] == 9


@pytest.mark.req("R-MULTI-2")
@pytest.mark.parametrize("after", [-1, "3", 1.5, 2**63, None, True])
async def test_a_bad_afterseq_is_invalid_params_naming_it(daemon: Daemon, after: Any) -> None:
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        if after is None:  # a number the session has not reached
            check_turn(await peer.prompt(sid, "hi"), sid)
            after = seqs(of(peer, sid))[-1] + 1
        code, data = await peer.error("session/attach", {"sessionId": sid, "afterSeq": after})
        assert code == -32602
        assert [e["field"] for e in data["errors"]] == ["afterSeq"], data


@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-SES-1")
async def test_attach_to_another_principals_session_is_refused(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner:
        async with await open_token_peer(daemon, owner, "alice") as alice:
            sid = await new_sid(alice)
            check_turn(await alice.prompt(sid, "mine"), sid)
            async with await open_token_peer(daemon, owner, "bob") as bob:
                code, _ = await bob.error("session/attach", {"sessionId": sid, "afterSeq": 0})
                assert code == -32003
                assert bob.updates == []
            # the owner (an admin) may follow it
            assert (await attach(owner, sid, 0))["replayed"] == len(of(alice, sid))
        code, data = await owner.error("session/attach", {"sessionId": "s_never_was"})
        assert code == -32000 and data["kind"] == "session_not_found"


# ----------------------------------------------------------------------------------------- R-MULTI-3


@pytest.mark.req("R-MULTI-3")
async def test_an_approval_outlives_the_client_that_prompted_and_the_first_answer_wins(daemon: Daemon) -> None:
    owner = await Peer.open(daemon)
    async with await Peer.open(daemon) as phone, await Peer.open(daemon) as laptop:
        sid = await new_sid(owner)
        for peer in (phone, laptop):
            await attach(peer, sid)
        await owner.start_prompt(sid, "/bash echo outlived")
        asked = await phone.wait_update("approval_request", session_id=sid)
        await owner.close()  # the prompting client goes away: its answer is lost, the turn is not
        await asyncio.sleep(0.3)  # time to read the EOF: nothing shows it, the connection stays until answered
        state = await attach(laptop, sid)
        assert state["running"] is True and state["pendingApprovals"] == [asked["requestId"]]
        approve = {"sessionId": sid, "requestId": asked["requestId"], "decision": "allow_once"}
        assert (await phone.call("session/approve", approve))["acknowledged"] is True
        assert (await laptop.call("session/approve", {**approve, "decision": "reject"}))["acknowledged"] is False
        for peer in (phone, laptop):
            resolved = await peer.wait_update("approval_resolved", session_id=sid)
            assert resolved["requestId"] == asked["requestId"] and resolved["decision"] == "allow_once"
            done = await peer.wait_update("turn_complete", session_id=sid)
            assert "outlived" in done["content"]
        # an id the session never gave is still a bad param
        code, data = await laptop.error("session/approve", {**approve, "requestId": "ap_999999"})
        assert code == -32602 and data["errors"][0]["field"] == "requestId"
        rows, _ = await transcript(phone, sid)
        assert [r["role"] for r in rows][-3:] == ["tool_call", "tool_result", "assistant"]


@pytest.mark.req("R-MULTI-3")
async def test_a_question_whose_client_leaves_is_asked_of_another_attached_client(daemon: Daemon) -> None:
    asker = await Peer.open(daemon, elicitation=True)
    async with await Peer.open(daemon, elicitation=True) as other:
        sid = await new_sid(asker)
        await attach(other, sid)
        await asker.start_prompt(sid, "/ask which colour?")
        await asker.wait_daemon_request()
        await asker.close()  # it never answers
        question = await other.wait_daemon_request()
        assert question["method"] == "elicitation/create" and question["params"]["sessionId"] == sid
        ((field, _),) = question["params"]["requestedSchema"]["properties"].items()
        await other.respond(question["id"], {"action": "accept", "content": {field: "teal"}})
        done = await other.wait_update("turn_complete", session_id=sid)
        assert "teal" in done["content"] and done["stopReason"] == "end_turn"


@pytest.mark.req("R-MULTI-3")
async def test_an_attached_client_cancels_the_turn_another_prompted(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as other:
        sid = await new_sid(owner)
        await attach(other, sid)
        mark, answer = await owner.start_prompt(sid, "/sleep 5")
        await other.wait_update("agent_message_chunk", session_id=sid)
        assert (await other.call("session/cancel", {"sessionId": sid}))["cancelled"] is True
        turn = await owner.finish_turn(sid, mark, answer)
        check_turn(turn, sid, stop="cancelled")
        assert (await other.wait_update("turn_complete", session_id=sid))["stopReason"] == "cancelled"


@pytest.mark.req("R-MULTI-3")
async def test_a_turn_runs_to_its_end_after_its_client_goes_and_the_transcript_has_it(daemon: Daemon) -> None:
    owner = await Peer.open(daemon)
    async with await Peer.open(daemon) as watcher:
        sid = await new_sid(owner)
        await attach(watcher, sid)
        await owner.start_prompt(sid, "/sleep 1")
        await watcher.wait_update("agent_message_chunk", session_id=sid)
        await owner.close()
        done = await watcher.wait_update("turn_complete", session_id=sid)
        assert done["stopReason"] == "end_turn"
        rows, _ = await transcript(watcher, sid)
        assert rows[-1]["role"] == "assistant" and rows[-1]["content"] == done["content"]


# ----------------------------------------------------------------------------------------- faults


@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-LIM")
async def test_a_watcher_that_stops_reading_is_cut_without_slowing_the_turn_or_the_others(
    daemon_factory: DaemonFactory,
) -> None:
    # every update of the turn stays retained, so only the stall rule can cut a watcher here
    limits = "replay_events = 100000\noutbound_stall_secs = 1\nmax_outbound_buffer_bytes = 65536"
    daemon = daemon_factory.start(CONFIG.replace("replay_events = 40", limits))
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as reader:
        sid = await new_sid(owner)
        with RawClient(daemon.socket_path) as stalled:  # a plain socket: nothing reads it behind our back
            stalled.initialize()
            attach_frame = {"jsonrpc": "2.0", "id": 2, "method": "session/attach", "params": {"sessionId": sid}}
            stalled.sock.sendall(json.dumps(attach_frame).encode() + b"\n")
            assert stalled.recv_frame()["result"]["seq"] == 0
            await attach(reader, sid)
            # megabytes: far more than the stalled one's socket buffers and `max_outbound_buffer_bytes`
            turn = await owner.prompt(sid, "/stream 60000", timeout=60)
            check_turn(turn, sid)
            await reader.wait_update("turn_complete", session_id=sid, timeout=30)
            assert seqs(of(reader, sid)) == seqs(turn.updates)
            # cut by the stall rule once `outbound_stall_secs` passed without it reading (the turn took less)
            await daemon.wait_stderr(lambda text: "no progress for 1 s" in text, timeout=15)
            received = await asyncio.to_thread(read_to_the_end, stalled)  # an abort: the last frame may be cut
            assert 0 < received.count(b"\n") < len(turn.updates) and b"turn_complete" not in received


def read_to_the_end(client: RawClient, timeout: float = 15) -> bytes:
    """Every byte until the daemon closes the connection (raises if it does not within `timeout`)."""
    client.sock.settimeout(timeout)
    received = client.buffer
    while data := client.sock.recv(1 << 20):
        received += data
    return received


@pytest.mark.req("R-MULTI-1")
@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-ACP-5")
async def test_sigkill_during_a_turn_two_watchers_reattach_and_see_the_interruption_once(
    daemon_factory: DaemonFactory,
) -> None:
    first = daemon_factory.start(CONFIG)
    owner, a, b = await Peer.open(first), await Peer.open(first), await Peer.open(first)
    sid = await new_sid(owner)
    check_turn(await owner.prompt(sid, "before the crash"), sid)
    for peer in (a, b):
        await attach(peer, sid, 0)
    await owner.start_prompt(sid, "/sleep 30")
    await a.wait_for(lambda: len(of(a, sid)) >= 8)
    await b.wait_for(lambda: len(of(b, sid)) >= 8)
    first.send_signal(signal.SIGKILL)
    first.wait_exit()
    for peer in (owner, a, b):
        await peer.close()
    last_a, last_b = seqs(of(a, sid))[-1], seqs(of(b, sid))[-1]
    second = restart(daemon_factory, first)
    async with await Peer.open(second) as a2, await Peer.open(second) as b2:
        for peer, last in ((a2, last_a), (b2, last_b)):
            state = await attach(peer, sid, last)
            # what came after `last` died with the process: the client rereads the transcript
            assert state["gap"] is True and state["running"] is False and state["seq"] > last
            rows, _ = await transcript(peer, sid)
            assert len(markers(rows)) == 1
        turn = await a2.prompt(sid, "after the crash")
        check_turn(turn, sid)
        assert seqs(turn.updates)[0] > max(last_a, last_b)  # a number is never given twice
        await b2.wait_update("turn_complete", session_id=sid)
        assert seqs(of(b2, sid)) == seqs(turn.updates)
        rows, _ = await transcript(b2, sid)
        assert len(markers(rows)) == 1


@pytest.mark.req("R-MULTI-2")
async def test_a_client_joining_a_running_turn_after_a_crash_sees_it_from_its_start(
    daemon_factory: DaemonFactory,
) -> None:
    """issue 38 §5.4: after a crash the numbering jumps (the reserved block), so `afterSeq:0` is a gap; the attach
    result's `turnStartSeq` is where the running turn starts, and replaying from it shows the whole turn."""
    first = daemon_factory.start(CONFIG)
    async with await Peer.open(first) as owner:
        sid = await new_sid(owner)
        check_turn(await owner.prompt(sid, "before the crash"), sid)
        last = seqs(of(owner, sid))[-1]
    first.send_signal(signal.SIGKILL)
    first.wait_exit()
    second = restart(daemon_factory, first)
    async with await Peer.open(second) as owner, await Peer.open(second) as joiner:
        idle = await attach(joiner, sid)
        assert idle["running"] is False and idle["turnStartSeq"] is None
        await owner.start_prompt(sid, "/sleep 30")
        await owner.wait_for(lambda: any(u["type"] == "agent_message_chunk" for u in of(owner, sid)))
        shown = of(owner, sid)
        assert shown[0]["seq"] > last + 1  # the numbering jumped
        state = await attach(joiner, sid, 0)
        assert state["running"] is True and state["gap"] is True  # from 0: not all of it is retained
        start = state["turnStartSeq"]
        assert start == shown[0]["seq"] - 1, (start, seqs(shown))
        joiner.updates.clear()
        state = await attach(joiner, sid, start)
        assert state["gap"] is False and state["turnStartSeq"] == start
        assert of(joiner, sid)[: len(shown)] == shown  # the turn from its first update
        await owner.call("session/cancel", {"sessionId": sid})
        await owner.wait_update("turn_complete", session_id=sid)
