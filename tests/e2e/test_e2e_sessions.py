"""`session/*` over a real socket (R-SES-1..4): shapes, ownership, resume rules, limits, busy, ordering."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, open_token_peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
ALL_SESSION_VERBS = '["create", "read", "update", "delete", "execute"]'

CONFIG = f"""\
[permission_profiles.sessions_all]
grants = {{ sessions = {ALL_SESSION_VERBS} }}
allowed_agents = ["*"]

[users.alice]
permission_profiles = ["sessions_all"]

[users.bob]
permission_profiles = ["sessions_all"]
"""

# `model` and `temperature`: the session's effective settings (R-MODEL-4)
NEW_KEYS = {"sessionId", "agentAlias", "mode", "messageCount", "workspaceDir", "resumed", "model", "temperature"}
LIST_KEYS = {
    *("sessionId", "agentAlias", "mode", "live", "killed", "createdAt", "lastActivity", "messageCount", "title"),
    *("model", "temperature"),
    *("parentId", "forkedAt"),  # R-BRANCH-1: null unless the session is a fork
}


@pytest.fixture(scope="module")
def ses_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


def listed(result: dict[str, Any], session_id: str) -> dict[str, Any] | None:
    return next((s for s in result["sessions"] if s["sessionId"] == session_id), None)


@pytest.mark.req("R-SES-1")
async def test_new_result_shape_and_resume_of_a_live_session(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        new = await owner.new_session()
        assert set(new) == NEW_KEYS, new
        assert new["agentAlias"] == "default" and new["mode"] == "acp"
        assert new["messageCount"] == 0 and new["resumed"] is False
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$", new["sessionId"]), new
        assert Path(new["workspaceDir"]).is_absolute() and Path(new["workspaceDir"]).is_dir(), new
        turn = await owner.prompt(new["sessionId"], "hello sessions")
        assert turn.result["stopReason"] == "end_turn"
        again = await owner.new_session(sessionId=new["sessionId"])
        assert again["resumed"] is True and again["sessionId"] == new["sessionId"]
        assert again["messageCount"] == 2, again  # user + assistant rows
        chosen = await owner.new_session(sessionId="chosen-id.1", agentAlias="default")
        assert chosen["sessionId"] == "chosen-id.1" and chosen["resumed"] is False
        # snake_case input spellings work too (R-WIRE-8)
        snake = await owner.call("session/new", {"session_id": "chosen-id.1"})
        assert snake["resumed"] is True


@pytest.mark.req("R-SES-1")
async def test_list_and_messages_shapes(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        sid = (await owner.new_session())["sessionId"]
        await owner.prompt(sid, "first prompt")
        await owner.prompt(sid, "second prompt")
        entry = listed(await owner.call("session/list"), sid)
        assert entry is not None
        assert set(entry) == LIST_KEYS, entry
        assert entry["agentAlias"] == "default" and entry["mode"] == "acp"
        assert entry["live"] is True and entry["killed"] is False
        assert ISO_RE.match(entry["createdAt"]) and ISO_RE.match(entry["lastActivity"]), entry
        assert entry["lastActivity"] >= entry["createdAt"]
        assert entry["messageCount"] == 4, entry

        msgs = await owner.call("session/messages", {"sessionId": sid})
        assert set(msgs) == {"sessionId", "messages", "total"}
        assert msgs["sessionId"] == sid and msgs["total"] == 4
        rows = msgs["messages"]
        assert [r["index"] for r in rows] == [0, 1, 2, 3]
        assert [r["role"] for r in rows] == ["user", "assistant", "user", "assistant"]
        assert rows[0]["content"] == "first prompt"
        assert rows[1]["content"] == "You said: «first prompt»"
        assert rows[3]["content"] == "You said: «second prompt»"
        for r in rows:
            assert set(r) <= {"index", "role", "content", "toolCallId", "name", "marker"}, r
        last = await owner.call("session/messages", {"sessionId": sid, "limit": 1})
        assert [r["index"] for r in last["messages"]] == [3] and last["total"] == 4
        page = await owner.call("session/messages", {"sessionId": sid, "limit": 2, "before": 3})
        assert [r["index"] for r in page["messages"]] == [1, 2]


@pytest.mark.req("R-SES-1")
async def test_ownership_is_enforced_for_another_principal(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        alice = await open_token_peer(ses_daemon, owner, "alice")
        bob = await open_token_peer(ses_daemon, owner, "bob")
        async with alice, bob:
            sid = (await alice.new_session())["sessionId"]
            await alice.prompt(sid, "alice's words")
            for method, params in [
                ("session/prompt", {"sessionId": sid, "prompt": "hijack"}),
                ("session/cancel", {"sessionId": sid}),
                ("session/approve", {"sessionId": sid, "requestId": "ap_1", "decision": "allow_once"}),
                ("session/messages", {"sessionId": sid}),
                ("session/close", {"sessionId": sid}),
                ("session/kill", {"sessionId": sid}),
                ("session/delete", {"sessionId": sid}),
                ("session/new", {"sessionId": sid}),  # R-SES-4: another principal's id
            ]:
                code, data = await bob.error(method, params)
                assert code == -32003, (method, data)
                assert data["kind"] == "session_not_owned", (method, data)
            # bob did not disturb anything
            msgs = await alice.call("session/messages", {"sessionId": sid})
            assert msgs["total"] == 2
            # lists: each user sees their own; the owner (admin) sees all
            bob_sid = (await bob.new_session())["sessionId"]
            owner_sid = (await owner.new_session())["sessionId"]
            alice_ids = {s["sessionId"] for s in (await alice.call("session/list"))["sessions"]}
            bob_ids = {s["sessionId"] for s in (await bob.call("session/list"))["sessions"]}
            owner_ids = {s["sessionId"] for s in (await owner.call("session/list"))["sessions"]}
            assert sid in alice_ids and bob_sid not in alice_ids and owner_sid not in alice_ids
            assert bob_sid in bob_ids and sid not in bob_ids
            assert {sid, bob_sid, owner_sid} <= owner_ids
            # the admin may read and prompt anyone's session
            assert (await owner.call("session/messages", {"sessionId": sid}))["total"] == 2
            turn = await owner.prompt(sid, "admin was here")
            assert turn.result["stopReason"] == "end_turn"
            # sessions outlive the connection that created them
            await alice.close()
            alice2 = await open_token_peer(ses_daemon, owner, "alice")
            async with alice2:
                again = await alice2.new_session(sessionId=sid)
                assert again["resumed"] is True and again["messageCount"] == 4


@pytest.mark.req("R-SES-4")
async def test_new_with_killed_deleted_or_closed_ids(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        killed = (await owner.new_session())["sessionId"]
        await owner.prompt(killed, "soon killed")
        assert await owner.call("session/kill", {"sessionId": killed}) == {"sessionId": killed, "killed": True}
        code, data = await owner.error("session/new", {"sessionId": killed})
        assert code == -32000, data
        code, data = await owner.error("session/prompt", {"sessionId": killed, "prompt": "again"})
        assert code == -32000, data
        # killed sessions stay readable and are hidden from the default list
        assert (await owner.call("session/messages", {"sessionId": killed}))["total"] == 2
        assert listed(await owner.call("session/list"), killed) is None
        entry = listed(await owner.call("session/list", {"includeKilled": True}), killed)
        assert entry is not None and entry["killed"] is True and entry["live"] is False

        deleted = (await owner.new_session())["sessionId"]
        await owner.prompt(deleted, "soon deleted")
        assert await owner.call("session/delete", {"sessionId": deleted}) == {"sessionId": deleted, "deleted": True}
        fresh = await owner.new_session(sessionId=deleted)
        assert fresh["sessionId"] == deleted
        assert fresh["resumed"] is False and fresh["messageCount"] == 0, fresh
        assert (await owner.call("session/messages", {"sessionId": deleted}))["total"] == 0

        closed = (await owner.new_session())["sessionId"]
        await owner.prompt(closed, "soon closed")
        assert await owner.call("session/close", {"sessionId": closed}) == {"sessionId": closed, "closed": True}
        entry = listed(await owner.call("session/list"), closed)
        assert entry is not None and entry["live"] is False
        resumed = await owner.new_session(sessionId=closed)
        assert resumed["resumed"] is True and resumed["messageCount"] == 2

        code, data = await owner.error("session/prompt", {"sessionId": "no-such-session", "prompt": "x"})
        assert code == -32000, data


@pytest.mark.req("R-SES-4")
@pytest.mark.req("R-LIM")
async def test_max_sessions_counts_live_sessions(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        active = (await owner.call("status"))["activeSessions"]
        await owner.call("config/set", {"prop": "limits.max_sessions", "value": active + 2})
        try:
            a = (await owner.new_session())["sessionId"]
            await owner.new_session(mode="chat")  # both modes count
            # Earlier tests' sessions are idle (their connections are gone): each new session unloads one (SPEC
            # §5), until every live session is one of this connection's, attached; then the limit answers.
            for _ in range(active + 1):
                response = await owner.request("session/new", {})
                if "error" in response:
                    break
            code, data = response["error"]["code"], response["error"].get("data") or {}
            assert code == -32001, data
            assert data["kind"] == "session_limit", data
            assert (await owner.call("status"))["activeSessions"] == active + 2
            # resuming a live session needs no new slot
            assert (await owner.new_session(sessionId=a))["resumed"] is True
            # closing one frees a slot
            await owner.call("session/close", {"sessionId": a})
            b = await owner.new_session()
            assert b["resumed"] is False
            code, data = await owner.error("session/new", {"sessionId": a})  # rehydrating needs a slot too
            assert code == -32001, data
        finally:
            await owner.call("config/delete", {"prop": "limits.max_sessions"})
        assert (await owner.new_session())["resumed"] is False


@pytest.mark.req("R-SES-2")
async def test_second_prompt_while_a_turn_runs_is_busy(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        sid = (await owner.new_session())["sessionId"]
        mark, fut = await owner.start_prompt(sid, "/sleep 2")
        await owner.wait_update("agent_message_chunk", session_id=sid, start=mark, timeout=5)
        code, data = await owner.error("session/prompt", {"sessionId": sid, "prompt": "me too"})
        assert code == -32002, data
        assert data["kind"] == "session_busy", data
        # also from another connection of the same principal
        async with await Peer.open(ses_daemon) as other:
            code, data = await other.error("session/prompt", {"sessionId": sid, "prompt": "me too"})
            assert code == -32002, data
        await owner.call("session/cancel", {"sessionId": sid})
        turn = await owner.finish_turn(sid, mark, fut, timeout=5)
        assert turn.result["stopReason"] == "cancelled"
        # the session is usable again, and the refused prompt left no row
        after = await owner.prompt(sid, "now it is my turn")
        assert after.result["stopReason"] == "end_turn"
        rows = (await owner.call("session/messages", {"sessionId": sid}))["messages"]
        assert [r["content"] for r in rows if r["role"] == "user"] == ["/sleep 2", "now it is my turn"]


@pytest.mark.req("R-SES-2")
async def test_two_prompts_at_once_on_a_closed_session_run_one_turn(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as first, await Peer.open(ses_daemon) as second:
        sid = (await first.new_session())["sessionId"]
        await first.call("session/close", {"sessionId": sid})  # durable only: each prompt brings it back
        params = {"sessionId": sid, "prompt": "/sleep 0.3"}
        answers = await asyncio.gather(
            first.request("session/prompt", params), second.request("session/prompt", params)
        )
        outcomes = sorted(str(a["error"]["code"]) if "error" in a else a["result"]["stopReason"] for a in answers)
        assert outcomes == ["-32002", "end_turn"], answers
        rows = (await first.call("session/messages", {"sessionId": sid}))["messages"]
        assert [r["content"] for r in rows if r["role"] == "user"] == ["/sleep 0.3"]


@pytest.mark.req("R-SES-3")
async def test_new_answers_before_any_update(ses_daemon: Daemon) -> None:
    async with await Peer.open(ses_daemon) as owner:
        sid = (await owner.new_session())["sessionId"]
        mark, fut = await owner.start_prompt(sid, "/sleep 1")
        await owner.wait_update("agent_message_chunk", session_id=sid, start=mark, timeout=5)
        async with await Peer.open(ses_daemon) as watcher:
            start = len(watcher.frames)
            attach = await watcher.start("session/new", {"sessionId": sid})
            response = await asyncio.wait_for(attach, 5)
            assert response["result"]["resumed"] is True, response
            await owner.finish_turn(sid, mark, fut, timeout=5)
            await watcher.call("status")  # a barrier: what was queued for the watcher before it has arrived
            frames = watcher.frames[start:]
            answer_at = next(i for i, f in enumerate(frames) if f.get("id") == response["id"])
            updates_at = [
                i
                for i, f in enumerate(frames)
                if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
            ]
            assert all(answer_at < i for i in updates_at), frames[: answer_at + 1]
            # (that the watcher does receive the rest of the turn is R-STREAM, test_e2e_streaming.py)

    # and for a brand-new session: nothing about it arrives before its session/new answer
    async with await Peer.open(ses_daemon) as fresh:
        start = len(fresh.frames)
        new = await fresh.new_session()
        first = fresh.frames[start]
        assert "result" in first and first["result"]["sessionId"] == new["sessionId"], first


@pytest.mark.req("R-SES-1")
async def test_token_user_without_a_grant_is_forbidden_before_ownership(daemon_factory: DaemonFactory) -> None:
    config = CONFIG + '\n[permission_profiles.reader]\ngrants = { sessions = ["read"] }\n\n[users.rita]\n'
    config += 'permission_profiles = ["reader"]\n'
    d = daemon_factory.start(config)
    async with await Peer.open(d) as owner:
        rita = await open_token_peer(d, owner, "rita")
        async with rita:
            code, data = await rita.error("session/new", {})
            assert code == -32012 and data["grant"] == "sessions:create", data
            sid = (await owner.new_session())["sessionId"]
            code, data = await rita.error("session/prompt", {"sessionId": sid, "prompt": "x"})
            assert code == -32012 and data["grant"] == "sessions:execute", data
            assert (await rita.call("session/list"))["sessions"] == []
