"""The durable ACP lifecycle over a real socket (SPEC §7.4, R-ACP-1..3 and R-ACP-5, R-ACP-8..11).

Trimming changes only the retained provider context, announced by `history_trimmed` once its snapshot is
committed; close keeps resumable history, kill leaves a readable tombstone, delete removes the durable row (and
nothing of a chat session with the same id); a failing kill/delete (injected with `ZEROCLAW_FAULTS`) never loses
the durable row. Crash recovery (R-ACP-4/5/6) is in `test_e2e_crash.py`.

`/context` (scripted provider) lists what the provider was given, one `role: <first 80 chars>` line each, so the
retained context is observable from outside.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, Turn, new_sid

# R-STORE-2: every test here runs on SQLite and, in the CI PostgreSQL pass, on PostgreSQL (docs/development.md).
pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-STORE-2")]

SYSTEM_PROMPT = "You are the durable test agent."

CONFIG = f"""\
[context]
max_messages = 4

[tools]
output_limit_bytes = 300000

[agents.auto]
auto_approve = ["bash"]

[agents.sys]
system_prompt = "{SYSTEM_PROMPT}"
"""


@pytest.fixture(scope="module")
def durable_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


async def rows_of(peer: Peer, sid: str) -> tuple[list[dict[str, Any]], int]:
    result = await peer.call("session/messages", {"sessionId": sid, "limit": 1000})
    return result["messages"], result["total"]


async def context_lines(peer: Peer, sid: str) -> tuple[list[str], Turn]:
    turn = await peer.prompt(sid, "/context")
    assert turn.result["stopReason"] == "end_turn", turn.result
    return turn.result["content"].splitlines(), turn


def trims(turn: Turn) -> list[dict[str, Any]]:
    """The turn's `history_trimmed` updates; when there is one it comes right before `turn_complete`."""
    found = turn.of_type("history_trimmed")
    if found:
        assert turn.types[-2:] == ["history_trimmed", "turn_complete"], turn.types
    return found


def listed(result: dict[str, Any], sid: str, mode: str = "acp") -> dict[str, Any] | None:
    return next((s for s in result["sessions"] if s["sessionId"] == sid and s["mode"] == mode), None)


async def wait_chunks(peer: Peer, mark: int, count: int) -> None:
    await peer.wait_for(lambda: sum(u["type"] == "agent_message_chunk" for u in peer.updates[mark:]) >= count)


# ----------------------------------------------------------------------------------------------- trimming


@pytest.mark.req("R-ACP-1")
@pytest.mark.req("R-ACP-2")
@pytest.mark.req("R-ACP-3")
@pytest.mark.req("R-STREAM-1")
async def test_trimming_keeps_every_transcript_row_and_is_announced(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer)
        first = await peer.prompt(sid, "one")
        second = await peer.prompt(sid, "two")
        assert trims(first) == trims(second) == []  # 2, then 4 messages: within max_messages = 4
        third = await peer.prompt(sid, "/think hidden-reasoning-42")
        assert [u["text"] for u in third.of_type("agent_thought_chunk")] == ["hidden-reasoning-42"]
        # R-ACP-2: announced after the snapshot and its boundary were committed, before the turn ends; six
        # messages are cut to at most three (TRIM_TO = 3/4 of the limit), starting at a user message
        assert trims(third) == [{"sessionId": sid, "type": "history_trimmed", "droppedMessages": 4,
                                 "keptMessages": 2, "checkpoint": 5, "seq": third.updates[-2]["seq"]}]  # fmt: skip

        lines, turn = await context_lines(peer, sid)
        assert lines == [
            "user: /think hidden-reasoning-42",
            "assistant: I have thought it over.",
            "user: /context",
        ]
        # R-ACP-3: hidden reasoning is never part of the retained context (only the prompt that asked for it is)
        assert not [line for line in lines if "hidden-reasoning-42" in line and not line.startswith("user: ")]
        assert trims(turn) == []  # four messages again: within the limit, no snapshot written

        # R-ACP-1: the visible transcript still has every row, numbered as it was written
        rows, total = await rows_of(peer, sid)
        assert total == 8 and [r["index"] for r in rows] == list(range(8)), rows
        assert [(r["role"], r["content"]) for r in rows[:6]] == [
            ("user", "one"),
            ("assistant", "You said: «one»"),
            ("user", "two"),
            ("assistant", "You said: «two»"),
            ("user", "/think hidden-reasoning-42"),
            ("assistant", "I have thought it over."),
        ]
        assert not [r for r in rows[:6] if "hidden-reasoning-42" in r["content"] and r["role"] != "user"], rows
        # paging by index sees the same rows
        page = await peer.call("session/messages", {"sessionId": sid, "limit": 2, "before": 2})
        assert [(r["index"], r["content"]) for r in page["messages"]] == [(0, "one"), (1, "You said: «one»")]
        assert page["total"] == 8


@pytest.mark.req("R-ACP-3")
async def test_the_snapshot_holds_no_system_prompt_or_thought(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer, agentAlias="sys")
        for prompt in ["/think secret-thought-1", "two", "/think secret-thought-3"]:
            await peer.prompt(sid, prompt)
        lines, _turn = await context_lines(peer, sid)  # given: system prompt + snapshot + this prompt
        # the runtime system prompt is added once per step, never stored in (and replayed from) the snapshot
        assert lines == [
            f"system: {SYSTEM_PROMPT}",
            "user: /think secret-thought-3",
            "assistant: I have thought it over.",
            "user: /context",
        ], lines
        lines, _turn = await context_lines(peer, sid)
        assert sum(line.startswith("system: ") for line in lines) == 1 and lines[0] == f"system: {SYSTEM_PROMPT}"
        # four messages were within the limit: retained as they were (the /context answer echoes the prompt)
        assert lines[1:4] == ["user: /think secret-thought-3", "assistant: I have thought it over.", "user: /context"]


@pytest.mark.req("R-ACP-2")
async def test_a_failed_snapshot_write_suppresses_the_notification(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG, env={"ZEROCLAW_FAULTS": "save_snapshot:1"})
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        turns = [await peer.prompt(sid, word) for word in ("one", "two", "three")]
        # the third turn needed a trim; its snapshot write failed, so nothing was announced
        assert [t.result["stopReason"] for t in turns] == ["end_turn"] * 3
        assert [trims(t) for t in turns] == [[], [], []], [t.types for t in turns]
        # ...and the session goes on with its previous (here: no) snapshot: the full provider-safe replay
        lines, turn = await context_lines(peer, sid)
        assert lines == [
            "user: one",
            "assistant: You said: «one»",
            "user: two",
            "assistant: You said: «two»",
            "user: three",
            "assistant: You said: «three»",
            "user: /context",
        ]
        # storage works again: the next trim is committed and announced
        assert trims(turn) == [{"sessionId": sid, "type": "history_trimmed", "droppedMessages": 6,
                                "keptMessages": 2, "checkpoint": 7, "seq": turn.updates[-2]["seq"]}]  # fmt: skip
        lines, _turn = await context_lines(peer, sid)
        # the snapshot holds the last exchange (the /context turn), then this prompt
        assert lines[0] == lines[-1] == "user: /context" and len(lines) == 3, lines
        rows, total = await rows_of(peer, sid)
        assert total == 10 and [r["index"] for r in rows] == list(range(10))


@pytest.mark.req("R-ACP-5")
async def test_persisted_tool_output_stays_within_the_row_limit(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer, agentAlias="auto")
        turn = await peer.prompt(sid, "/bash head -c 200000 /dev/zero | tr '\\0' x", timeout=20)
        assert turn.result["stopReason"] == "end_turn"
        (result,) = turn.of_type("tool_result")
        assert len(result["rawOutput"]) > 65536  # the tool's own cap here is 300000 bytes
        rows, _total = await rows_of(peer, sid)
        assert [r["role"] for r in rows] == ["user", "tool_call", "tool_result", "assistant"]
        for row in rows:
            assert len(row["content"].encode()) <= 65536, (row["role"], len(row["content"].encode()))
        assert rows[2]["content"].startswith("x" * 1000) and "truncated" in rows[2]["content"][-200:]


# ------------------------------------------------------------------------------------------------- close


@pytest.mark.req("R-ACP-8")
async def test_close_keeps_resumable_history(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer)
        await peer.prompt(sid, "first")
        assert await peer.call("session/close", {"sessionId": sid}) == {"sessionId": sid, "closed": True}
        entry = listed(await peer.call("session/list"), sid)
        assert entry is not None and entry["live"] is False and entry["messageCount"] == 2, entry
        # not live: the live-only operations do not find it...
        code, _ = await peer.error("session/cancel", {"sessionId": sid})
        assert code == -32000
        # ...but its history is kept, and session/new resumes it with nothing added
        rows, total = await rows_of(peer, sid)
        assert total == 2 and [r["content"] for r in rows] == ["first", "You said: «first»"]
        resumed = await peer.new_session(sessionId=sid)
        assert resumed["resumed"] is True and resumed["messageCount"] == 2, resumed
        lines, _ = await context_lines(peer, sid)
        assert lines == ["user: first", "assistant: You said: «first»", "user: /context"]

        # session/prompt on a closed ACP session rehydrates it
        await peer.call("session/close", {"sessionId": sid})
        turn = await peer.prompt(sid, "after close")
        assert turn.result == {"sessionId": sid, "stopReason": "end_turn", "content": "You said: «after close»"}
        entry = listed(await peer.call("session/list"), sid)
        assert entry is not None and entry["live"] is True and entry["messageCount"] == 6, entry
        assert not [r for r in (await rows_of(peer, sid))[0] if r["role"] == "marker"]


@pytest.mark.req("R-ACP-8")
async def test_close_cancels_a_running_turn_and_keeps_its_progress(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer)
        mark, fut = await peer.start_prompt(sid, "/sleep 5")
        await wait_chunks(peer, mark, 4)
        await peer.call("session/close", {"sessionId": sid})
        turn = await peer.finish_turn(sid, mark, fut)
        assert turn.result["stopReason"] == "cancelled", turn.result
        streamed = turn.result["content"]
        assert streamed.startswith("Sleeping for 5 s...") and not streamed.endswith("Done."), streamed
        rows, total = await rows_of(peer, sid)
        # the cancelled turn reached a terminal state: its text is kept once and no interruption marker is due
        assert [(r["role"], r["content"]) for r in rows] == [("user", "/sleep 5"), ("assistant", streamed)]
        resumed = await peer.new_session(sessionId=sid)
        assert resumed["resumed"] is True and resumed["messageCount"] == total == 2, resumed
        lines, _ = await context_lines(peer, sid)
        assert lines == ["user: /sleep 5", f"assistant: {streamed}", "user: /context"]


@pytest.mark.req("R-ACP-4")
async def test_turn_ends_show_a_cancelled_turn_only_when_asked(durable_daemon: Daemon) -> None:
    """issue 29 §4.9: a cancelled turn adds no row to the transcript (R-ACP-4, "Turns that end on purpose"), and
    `session/messages` answers as before; with `turnEnds: true` the result also says where each ended turn of the
    page ends and how (`cancelled`, `end_turn`), so `zeroclaw chat --session` can show `(cancelled)`."""
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer)
        assert (await peer.prompt(sid, "one")).result["stopReason"] == "end_turn"  # rows 0, 1
        mark, fut = await peer.start_prompt(sid, "/sleep 5")  # rows 2, 3
        await wait_chunks(peer, mark, 2)
        assert await peer.call("session/cancel", {"sessionId": sid}) == {"sessionId": sid, "cancelled": True}
        cancelled = await peer.finish_turn(sid, mark, fut)
        assert cancelled.result["stopReason"] == "cancelled", cancelled.result
        assert (await peer.prompt(sid, "two")).result["stopReason"] == "end_turn"  # rows 4, 5

        plain = await peer.call("session/messages", {"sessionId": sid})
        assert list(plain) == ["sessionId", "messages", "total"], plain  # no turnEnds unless asked
        assert [(r["role"], r["content"]) for r in plain["messages"]] == [
            ("user", "one"),
            ("assistant", "You said: «one»"),
            ("user", "/sleep 5"),
            ("assistant", cancelled.result["content"]),
            ("user", "two"),
            ("assistant", "You said: «two»"),
        ], plain  # and no marker row for the cancelled turn
        assert await peer.call("session/messages", {"sessionId": sid, "turnEnds": False}) == plain

        asked = await peer.call("session/messages", {"sessionId": sid, "turnEnds": True})
        assert list(asked) == ["sessionId", "messages", "total", "turnEnds"], asked
        assert {key: value for key, value in asked.items() if key != "turnEnds"} == plain
        assert asked["turnEnds"] == [
            {"index": 1, "stopReason": "end_turn"},
            {"index": 3, "stopReason": "cancelled"},
            {"index": 5, "stopReason": "end_turn"},
        ], asked
        # snake_case as every param (R-WIRE-8); a page lists the turns whose last row it holds
        page = await peer.call("session/messages", {"sessionId": sid, "turn_ends": True, "limit": 3, "before": 5})
        assert [r["index"] for r in page["messages"]] == [2, 3, 4] and page["total"] == 6, page
        assert page["turnEnds"] == [{"index": 3, "stopReason": "cancelled"}], page  # the turn of row 4 goes on
        empty = await peer.call("session/messages", {"sessionId": sid, "turnEnds": True, "limit": 0})
        assert empty == {"sessionId": sid, "messages": [], "total": 6, "turnEnds": []}, empty
        code, data = await peer.error("session/messages", {"sessionId": sid, "turnEnds": "yes"})
        assert code == -32602 and data["errors"][0]["field"] == "turnEnds", data


@pytest.mark.req("R-ACP-8")
@pytest.mark.req("R-MULTI-4")
async def test_a_closed_chat_session_is_gone_but_listed_with_its_history(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        opened = await peer.new_session(mode="chat")
        sid = opened["sessionId"]
        assert opened["mode"] == "chat" and opened["resumed"] is False
        assert (await peer.prompt(sid, "chat hello")).result["stopReason"] == "end_turn"
        assert await peer.call("session/close", {"sessionId": sid}) == {"sessionId": sid, "closed": True}
        for method, params in [
            ("session/prompt", {"sessionId": sid, "prompt": "again"}),
            ("session/new", {"sessionId": sid, "mode": "chat"}),
            ("session/close", {"sessionId": sid}),
        ]:
            code, data = await peer.error(method, params)
            assert code == -32000 and data.get("kind") == "session_not_found", (method, code, data)
        # never resumed, but listed (closed) and its kept history readable (R-MULTI-4)
        entry = listed(await peer.call("session/list"), sid, "chat")
        assert entry is not None and entry["title"] == "chat hello" and entry["live"] is False, entry
        history = await peer.call("session/messages", {"sessionId": sid})
        assert [m["content"] for m in history["messages"]] == ["chat hello", "You said: «chat hello»"], history


# -------------------------------------------------------------------------------------------------- kill


@pytest.mark.req("R-ACP-9")
async def test_kill_leaves_a_readable_tombstone_also_after_a_restart(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        idle = await new_sid(peer)
        await peer.prompt(idle, "soon killed")
        running = await new_sid(peer)
        mark, fut = await peer.start_prompt(running, "/sleep 5")
        await wait_chunks(peer, mark, 3)
        assert await peer.call("session/kill", {"sessionId": running}) == {"sessionId": running, "killed": True}
        turn = await peer.finish_turn(running, mark, fut)
        assert turn.result["stopReason"] == "cancelled", turn.result  # kill cancels the running turn
        assert await peer.call("session/kill", {"sessionId": idle}) == {"sessionId": idle, "killed": True}
        partial = turn.result["content"]

    async def check(peer: Peer) -> None:
        rows, total = await rows_of(peer, idle)
        assert total == 2 and [r["content"] for r in rows] == ["soon killed", "You said: «soon killed»"]
        rows, total = await rows_of(peer, running)
        assert [(r["role"], r["content"]) for r in rows] == [("user", "/sleep 5"), ("assistant", partial)], rows
        listing = await peer.call("session/list")
        assert listed(listing, idle) is None and listed(listing, running) is None
        everything = await peer.call("session/list", {"includeKilled": True})
        for sid, count in ((idle, 2), (running, 2)):
            entry = listed(everything, sid)
            assert entry is not None and entry["killed"] is True and entry["live"] is False, entry
            assert entry["messageCount"] == count, entry
            for method, params in [
                ("session/new", {"sessionId": sid}),
                ("session/prompt", {"sessionId": sid, "prompt": "again"}),
            ]:
                code, data = await peer.error(method, params)
                assert code == -32000, (method, code, data)
        rows, total = await rows_of(peer, idle)
        assert total == 2, "a refused rehydration must not touch the tombstone"

    async with await Peer.open(daemon) as peer:
        await check(peer)
    assert daemon.stop() == 0
    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as peer:
        await check(peer)


# ------------------------------------------------------------------------------------------------ delete


@pytest.mark.req("R-ACP-10")
async def test_delete_removes_the_durable_session(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        live = await new_sid(peer)
        await peer.prompt(live, "to be deleted")
        closed = await new_sid(peer)
        await peer.prompt(closed, "closed, then deleted")
        await peer.call("session/close", {"sessionId": closed})
        for sid in (live, closed):  # a live ACP session, and a durable row with no live session
            assert await peer.call("session/delete", {"sessionId": sid}) == {"sessionId": sid, "deleted": True}
            code, _ = await peer.error("session/messages", {"sessionId": sid})
            assert code == -32000
            code, _ = await peer.error("session/prompt", {"sessionId": sid, "prompt": "x"})
            assert code == -32000
            assert listed(await peer.call("session/list", {"includeKilled": True}), sid) is None
            code, _ = await peer.error("session/delete", {"sessionId": sid})
            assert code == -32000
            fresh = await peer.new_session(sessionId=sid)
            assert fresh["resumed"] is False and fresh["messageCount"] == 0, fresh
            lines, _ = await context_lines(peer, sid)
            assert lines == ["user: /context"], "a deleted session's context is gone too"


@pytest.mark.req("R-ACP-10")
async def test_delete_leaves_a_live_chat_session_with_the_same_id(durable_daemon: Daemon) -> None:
    async with await Peer.open(durable_daemon) as peer:
        sid = await new_sid(peer)
        await peer.prompt(sid, "acp words")
        await peer.call("session/close", {"sessionId": sid})
        chat = await peer.new_session(sessionId=sid, mode="chat")
        assert chat["sessionId"] == sid and chat["mode"] == "chat" and chat["resumed"] is False, chat
        await peer.prompt(sid, "chat words")
        both = await peer.call("session/list")
        assert listed(both, sid, "acp") is not None and listed(both, sid, "chat") is not None, both

        assert await peer.call("session/delete", {"sessionId": sid}) == {"sessionId": sid, "deleted": True}
        after = await peer.call("session/list", {"includeKilled": True})
        assert listed(after, sid, "acp") is None, "the ACP row is gone"
        entry = listed(after, sid, "chat")
        assert entry is not None and entry["live"] is True and entry["messageCount"] == 2, entry
        # the chat session is untouched and isolated: its own history, still usable
        rows, total = await rows_of(peer, sid)
        assert [r["content"] for r in rows] == ["chat words", "You said: «chat words»"] and total == 2
        turn = await peer.prompt(sid, "chat again")
        assert turn.result["stopReason"] == "end_turn"
        assert (await rows_of(peer, sid))[1] == 4
        await peer.call("session/close", {"sessionId": sid})
        fresh = await peer.new_session(sessionId=sid)  # the ACP row really is gone: a new empty session
        assert fresh["mode"] == "acp" and fresh["resumed"] is False and fresh["messageCount"] == 0, fresh


# ------------------------------------------------------------------------------------------- faults (11)


async def internal_error(peer: Peer, method: str, sid: str) -> None:
    code, data = await peer.error(method, {"sessionId": sid})
    assert code == -32603 and data.get("kind") == "internal_error" and data.get("error_id"), (code, data)


@pytest.mark.req("R-ACP-11")
@pytest.mark.parametrize("method", ["session/kill", "session/delete"])
async def test_a_failing_kill_or_delete_keeps_the_durable_session(daemon_factory: DaemonFactory, method: str) -> None:
    point = method.removeprefix("session/")
    daemon = daemon_factory.start(CONFIG, env={"ZEROCLAW_FAULTS": f"{point}:2"})
    async with await Peer.open(daemon) as peer:
        # 1. a running turn: cancellation is signalled first, then the storage step fails
        running = await new_sid(peer)
        await peer.prompt(running, "before")
        mark, fut = await peer.start_prompt(running, "/sleep 5")
        await wait_chunks(peer, mark, 3)
        await internal_error(peer, method, running)
        turn = await peer.finish_turn(running, mark, fut)
        assert turn.result["stopReason"] == "cancelled", turn.result
        partial = turn.result["content"]
        # the forced cancellation removed that live generation for good...
        entry = listed(await peer.call("session/list"), running)
        assert entry is not None and entry["live"] is False and entry["killed"] is False, entry
        # ...but the durable row and its checkpoint are intact
        rows, total = await rows_of(peer, running)
        assert total == 4
        assert [(r["role"], r["content"]) for r in rows] == [
            ("user", "before"),
            ("assistant", "You said: «before»"),
            ("user", "/sleep 5"),
            ("assistant", partial),
        ], rows
        # a new prompt rehydrates it from durable storage (no interruption marker: the turn ended as cancelled)
        lines, _ = await context_lines(peer, running)
        assert lines == ["user: before", "assistant: You said: «before»", "user: /sleep 5", f"assistant: {partial}",
                         "user: /context"], lines  # fmt: skip
        entry = listed(await peer.call("session/list"), running)
        assert entry is not None and entry["live"] is True and entry["messageCount"] == 6, entry

        # 2. an idle live session: the RPC fails and the live owner stays registered and usable
        idle = await new_sid(peer)
        await peer.prompt(idle, "idle one")
        await internal_error(peer, method, idle)
        entry = listed(await peer.call("session/list"), idle)
        assert entry is not None and entry["live"] is True and entry["killed"] is False, entry
        turn = await peer.prompt(idle, "still usable")
        assert turn.result["content"] == "You said: «still usable»"
        assert (await rows_of(peer, idle))[1] == 4

        # 3. storage works again: the second attempt succeeds for both
        for sid in (idle, running):
            done = await peer.call(method, {"sessionId": sid})
            assert done == {"sessionId": sid, ("killed" if point == "kill" else "deleted"): True}
            code, _ = await peer.error("session/prompt", {"sessionId": sid, "prompt": "x"})
            assert code == -32000
            if point == "kill":
                assert (await rows_of(peer, sid))[1] >= 4  # a tombstone stays readable
            else:
                code, _ = await peer.error("session/messages", {"sessionId": sid})
                assert code == -32000


@pytest.mark.req("R-ACP-11")
async def test_a_failing_close_keeps_nothing_half_done(daemon_factory: DaemonFactory) -> None:
    """Not a numbered case of R-ACP-11, but the same promise: a failed storage step loses no durable state."""
    daemon = daemon_factory.start(CONFIG, env={"ZEROCLAW_FAULTS": "close:1"})
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        await peer.prompt(sid, "kept")
        code, data = await peer.error("session/close", {"sessionId": sid})
        assert code == -32603, (code, data)
        rows, total = await rows_of(peer, sid)
        assert total == 2 and [r["content"] for r in rows] == ["kept", "You said: «kept»"]
        resumed = await peer.new_session(sessionId=sid)
        assert resumed["resumed"] is True and resumed["messageCount"] == 2
        assert (await peer.prompt(sid, "on")).result["stopReason"] == "end_turn"
