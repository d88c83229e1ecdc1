"""Branching sessions over a real socket (SPEC §24, R-BRANCH-1): what a fork gives the model, seen from outside.

`/context` (scripted provider) lists what the provider was given, one `role: <first 80 chars>` line each: a fork at
the k-th prompt gives its model exactly the parent's first k-1 turns, a fork of a trimmed session the parent's
retained context (its snapshot), and a chat session forks as an ACP one does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acp import text_block
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, new_sid

TRIMMING = """\
[context]
max_messages = 4
"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start("")
    finally:
        factory.close()


@pytest.fixture(scope="module")
def trimming_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(TRIMMING)
    finally:
        factory.close()


async def context_of(peer: Peer, sid: str) -> list[str]:
    turn = await peer.prompt(sid, "/context")
    assert turn.result["stopReason"] == "end_turn", turn.result
    return turn.result["content"].splitlines()  # type: ignore[no-any-return]


async def rows_of(peer: Peer, sid: str) -> list[dict[str, Any]]:
    return (await peer.call("session/messages", {"sessionId": sid, "limit": 1000}))["messages"]  # type: ignore[no-any-return]


def said(text: str) -> list[str]:
    return [f"user: {text}", f"assistant: You said: «{text}»"]


@pytest.mark.req("R-BRANCH-1")
async def test_a_fork_at_the_kth_prompt_gives_the_model_the_first_k_minus_1_turns(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        parent = await new_sid(peer)
        for text in ("one", "two", "three"):
            await peer.prompt(parent, text)
        rows = await rows_of(peer, parent)
        third = next(r["index"] for r in rows if r["role"] == "user" and r["content"] == "three")
        forked = await peer.call("session/fork", {"sessionId": parent, "atIndex": third})
        child = forked["sessionId"]
        assert forked == {"sessionId": child, "parentId": parent, "forkedAt": third, "messageCount": third}
        assert await context_of(peer, child) == [*said("one"), *said("two"), "user: /context"]
        # the child numbers on from the fork point; the parent is unchanged
        assert [r["index"] for r in await rows_of(peer, child)] == list(range(third + 2))
        assert len(await rows_of(peer, parent)) == len(rows)
        listed = await peer.call("session/list", {})
        entry = next(s for s in listed["sessions"] if s["sessionId"] == child)
        assert (entry["parentId"], entry["forkedAt"]) == (parent, third)
        assert next(s for s in listed["sessions"] if s["sessionId"] == parent)["parentId"] is None


@pytest.mark.req("R-BRANCH-1")
async def test_a_fork_at_a_row_that_is_no_prompt_is_refused_naming_at_index(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        parent = await new_sid(peer)
        await peer.prompt(parent, "one")
        code, error = await peer.error("session/fork", {"sessionId": parent, "atIndex": 1})
        assert code == -32602 and error["errors"][0]["field"] == "atIndex", error
        code, _error = await peer.error("session/fork", {"sessionId": "s_nope"})
        assert code != 0


@pytest.mark.req("R-BRANCH-1")
async def test_a_whole_fork_continues_with_every_finished_turn(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        parent = await new_sid(peer)
        await peer.prompt(parent, "one")
        forked = await peer.call("session/fork", {"sessionId": parent})
        assert forked["forkedAt"] == 2
        assert await context_of(peer, forked["sessionId"]) == [*said("one"), "user: /context"]


@pytest.mark.req("R-BRANCH-1")
async def test_a_chat_session_forks_too(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        parent = await new_sid(peer, mode="chat")
        await peer.prompt(parent, "one")
        child = (await peer.call("session/fork", {"sessionId": parent}))["sessionId"]
        opened = await peer.new_session(sessionId=child, mode="chat")
        assert opened["sessionId"] == child
        assert await context_of(peer, child) == [*said("one"), "user: /context"]


@pytest.mark.req("R-BRANCH-1")
async def test_a_fork_of_a_trimmed_session_starts_from_its_snapshot(trimming_daemon: Daemon) -> None:
    async with await Peer.open(trimming_daemon) as peer:
        parent = await new_sid(peer)
        for text in ("one", "two", "three"):
            await peer.prompt(parent, text)  # the third turn trims: a snapshot drops "one"
        child = (await peer.call("session/fork", {"sessionId": parent}))["sessionId"]
        from_child = await context_of(peer, child)
        assert "user: one" not in from_child
        assert from_child == await context_of(peer, parent)


@pytest.mark.req("R-BRANCH-1")
@pytest.mark.req("R-BRANCH-6")
async def test_a_fork_at_a_prompt_after_a_trim_gives_the_model_what_the_parent_had_there(
    trimming_daemon: Daemon,
) -> None:
    async with await Peer.open(trimming_daemon) as peer:
        parent = await new_sid(peer)
        for text in ("one", "two", "three"):
            await peer.prompt(parent, text)  # trimmed: a snapshot drops "one"
        there = await context_of(peer, parent)  # what the parent's model had at this prompt
        for text in ("four", "five", "six"):
            await peer.prompt(parent, text)  # trimmed again: newer snapshots, covering rows after the point
        rows = await rows_of(peer, parent)
        point = next(r["index"] for r in rows if r["content"] == "/context")
        child = (await peer.call("session/fork", {"sessionId": parent, "atIndex": point}))["sessionId"]
        assert "user: one" not in there and there[-1] == "user: /context", there
        assert await context_of(peer, child) == there


# ----------------------------------------------------------------------------------------------- rollback


@pytest.mark.req("R-BRANCH-2")
async def test_a_rollback_removes_the_turns_from_what_the_model_sees_and_tells_followers(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer, await Peer.open(daemon) as follower:
        sid = await new_sid(peer)
        for text in ("one", "two", "three"):
            await peer.prompt(sid, text)
        await follower.call("session/attach", {"sessionId": sid})
        mark = len(follower.updates)
        done = await peer.call("session/rollback", {"sessionId": sid, "turns": 2})
        assert done == {"sessionId": sid, "turns": 2, "fromIndex": 2, "markerIndex": 6}
        update = await follower.wait_update("rolled_back", session_id=sid, start=mark)
        assert (update["turns"], update["fromIndex"]) == (2, 2)
        assert await context_of(peer, sid) == [*said("one"), "user: /context"]
        shown = await rows_of(peer, sid)
        assert [r["index"] for r in shown] == [0, 1, 6, 7, 8] and shown[2]["marker"] == "rolled_back"
        everything = await peer.call("session/messages", {"sessionId": sid, "includeRolledBack": True})
        assert [r["index"] for r in everything["messages"]] == list(range(9))
        code, error = await peer.error("session/rollback", {"sessionId": sid, "turns": 3})
        assert code == -32602 and error["errors"][0]["field"] == "turns", error


@pytest.mark.req("R-BRANCH-2")
async def test_a_rollback_while_a_turn_runs_is_busy(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        await peer.prompt(sid, "one")
        _mark, running = await peer.start_prompt(sid, "/sleep 2")
        code, _error = await peer.error("session/rollback", {"sessionId": sid, "turns": 1})
        assert code == -32002
        await peer.call("session/cancel", {"sessionId": sid})
        await running


# ----------------------------------------------------------------------------------------------- ACP


@pytest.mark.req("R-BRANCH-4")
async def test_acp_forks_a_session_and_load_of_the_fork_replays_its_history(daemon: Daemon) -> None:
    from acp_harness import initialized, open_acp

    (daemon.root / "project").mkdir(exist_ok=True)
    cwd = str(daemon.root / "project")
    async with open_acp(daemon) as (conn, recorder, _process):
        hello = await initialized(conn)
        assert hello.agent_capabilities.session_capabilities.fork is not None
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("first words")])
        forked = await conn.fork_session(cwd=cwd, session_id=sid, mcp_servers=[])
        child = forked.session_id
        assert child != sid
        await conn.prompt(session_id=child, prompt=[text_block("in the fork")])
    async with open_acp(daemon) as (conn, recorder, _process):
        await initialized(conn)
        await conn.load_session(cwd=cwd, session_id=child, mcp_servers=[])
        text = recorder.text(child)
        assert "You said: «first words»" in text and "You said: «in the fork»" in text
