"""`session/list` pages over a real socket and over REST (R-MULTI-4): order, a cursor walk that shows every session
once, title search, closed and killed sessions, refused cursors and limits. Both backends (tests/db_backend.py)."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from session_client import Peer, open_token_peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """
[permission_profiles.sessions_all]
grants = { sessions = ["create", "read", "update", "delete", "execute"] }
allowed_agents = ["*"]

[users.alice]
permission_profiles = ["sessions_all"]

[users.bob]
permission_profiles = ["sessions_all"]
"""


async def walk(peer: Peer, limit: int, **params: Any) -> list[dict[str, Any]]:
    """Every page of a list, each asked with the cursor of the one before."""
    entries: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await peer.call("session/list", {**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
        assert len(page["sessions"]) <= limit
        entries += page["sessions"]
        if (cursor := page["nextCursor"]) is None:
            return entries


def keys(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["sessionId"], e["mode"]) for e in entries]


@pytest.mark.req("R-MULTI-4")
async def test_pages_walk_every_session_once_newest_first_and_search_titles(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner, await open_token_peer(daemon, owner, "alice") as alice:
        made = []
        for n in range(23):
            mode = "chat" if n % 3 == 0 else "acp"
            sid = (await alice.new_session(mode=mode))["sessionId"]
            made.append((sid, mode))
            if n % 2 == 0:
                assert (await alice.prompt(sid, f"\n  Deploy STEP {n} of the rollout  \nwith details")).result
        everything = await alice.call("session/list")
        assert everything["nextCursor"] is None and sorted(keys(everything["sessions"])) == sorted(made)
        stamps = [e["lastActivity"] for e in everything["sessions"]]  # the wire's are to the millisecond
        assert stamps == sorted(stamps, reverse=True)  # newest activity first
        for limit in (1, 4, 23, 50):
            assert keys(await walk(alice, limit)) == keys(everything["sessions"])

        titles = {e["sessionId"]: e["title"] for e in everything["sessions"]}
        assert titles[made[0][0]] == "Deploy STEP 0 of the rollout" and titles[made[1][0]] is None
        found = await walk(alice, 2, query="step 1")  # case-insensitive substring: 10, 12, ..., 18
        assert sorted(e["title"] for e in found) == [f"Deploy STEP {n} of the rollout" for n in (10, 12, 14, 16, 18)]
        chats = await walk(alice, 3, mode="chat")
        assert keys(chats) == [k for k in keys(everything["sessions"]) if k[1] == "chat"]
        long = (await alice.new_session())["sessionId"]
        await alice.prompt(long, "x" * 200)
        assert (await alice.call("session/list", {"limit": 1}))["sessions"][0]["title"] == "x" * 80

        # the owner (admin) sees alice's too; alice's cursor is not the owner's list
        page = await alice.call("session/list", {"limit": 2})
        code, data = await owner.error("session/list", {"limit": 2, "cursor": page["nextCursor"]})
        assert code == -32602 and data["errors"][0]["field"] == "cursor", data


@pytest.mark.req("R-MULTI-4")
async def test_closed_chat_sessions_are_listed_and_killed_ones_only_when_asked(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        chat = (await peer.new_session(mode="chat"))["sessionId"]
        await peer.prompt(chat, "kept history")
        await peer.call("session/close", {"sessionId": chat})
        killed = (await peer.new_session())["sessionId"]
        await peer.call("session/kill", {"sessionId": killed})
        listed = {e["sessionId"]: e for e in (await peer.call("session/list"))["sessions"]}
        assert chat in listed and killed not in listed
        assert listed[chat]["title"] == "kept history" and listed[chat]["messageCount"] == 2
        history = await peer.call("session/messages", {"sessionId": chat})  # its history can be read again
        assert history["messages"][0]["content"] == "kept history"
        every = keys(await walk(peer, 1, includeKilled=True))
        assert (killed, "acp") in every and (chat, "chat") in every
        code, _ = await peer.error("session/new", {"sessionId": chat, "mode": "chat"})
        assert code == -32000  # still never resumed (R-ACP-8)


@pytest.mark.req("R-MULTI-4")
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": "eyJhIjoxfQ"}, "cursor"),
        ({"cursor": ""}, "cursor"),
    ],
)
async def test_a_bad_limit_or_cursor_is_refused_naming_it(
    daemon_factory: DaemonFactory, params: dict[str, Any], field: str
) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        code, data = await peer.error("session/list", params)
        assert code == -32602 and data["errors"][0]["field"] == field, data


@pytest.mark.req("R-MULTI-4")
async def test_a_cursor_of_another_query_is_refused_never_a_wrong_page(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        for _ in range(3):
            sid = (await peer.new_session())["sessionId"]
            await peer.prompt(sid, "alpha")
        cursor = (await peer.call("session/list", {"limit": 1, "query": "alpha"}))["nextCursor"]
        assert cursor is not None
        assert len((await peer.call("session/list", {"limit": 5, "query": "alpha", "cursor": cursor}))["sessions"]) == 2
        for other in ({"query": "beta"}, {"mode": "acp", "query": "alpha"}, {"includeKilled": True, "query": "alpha"}):
            code, data = await peer.error("session/list", {**other, "cursor": cursor})
            assert code == -32602 and data["errors"][0]["field"] == "cursor", (other, data)


@pytest.mark.req("R-MULTI-4")
async def test_rest_pages_like_session_list(daemon_factory: DaemonFactory) -> None:
    daemon: Daemon = daemon_factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    match = READY_RE.match(daemon.ready_line or "")
    assert match is not None
    async with await daemon.client() as owner:
        token = (await owner.call("pairing/create", {"user": "alice"}))["token"]
    async with await daemon.client(authToken=token) as alice:
        for n in range(5):
            await alice.call("session/new", {"mode": "chat" if n == 2 else "acp"})
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=match["gateway"], trust_env=False, timeout=30, headers=headers) as http:
        whole = (await http.get("/api/sessions")).json()
        walked, cursor = [], None
        while True:
            query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
            page = (await http.get("/api/sessions", params=query)).json()
            walked += page["sessions"]
            if (cursor := page["nextCursor"]) is None:
                break
        assert walked == whole["sessions"] and len(walked) == 5
        chat = (await http.get("/api/sessions", params={"mode": "chat"})).json()["sessions"]
        assert [e["mode"] for e in chat] == ["chat"]
        response = await http.get("/api/sessions", params={"limit": "0"})
        assert response.status_code == 400 and response.json()["error"]["errors"][0]["field"] == "limit"
        response = await http.get("/api/sessions", params={"cursor": "zz"})
        assert response.status_code == 400 and response.json()["error"]["errors"][0]["field"] == "cursor"
