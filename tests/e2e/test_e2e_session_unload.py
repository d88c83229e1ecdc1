"""Idle live sessions do not pile up (SPEC §5 `max_sessions`, issue 38 §5.2): at the cap the least recently used
live session with no running turn and no attached connection is unloaded; it stays stored and comes back on use.
`-32001` only when every live session is busy or attached. A daemon with `[limits] max_sessions = 3`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, new_sid

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.req("R-LIM"),
    pytest.mark.req("R-SES-4"),
]

CONFIG = """\
[limits]
max_sessions = 3
"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


async def live_flags(peer: Peer) -> dict[str, bool]:
    listed = await peer.call("session/list", {})
    return {s["sessionId"]: s["live"] for s in listed["sessions"]}


async def detach(peer: Peer, *sids: str) -> None:
    for sid in sids:
        assert (await peer.call("session/detach", {"sessionId": sid}))["detached"] is True


async def user_lines(peer: Peer, sid: str) -> list[str]:
    page: dict[str, Any] = await peer.call("session/messages", {"sessionId": sid})
    return [m["content"] for m in page["messages"] if m["role"] == "user"]


async def test_idle_sessions_make_room_and_come_back_and_busy_or_attached_ones_stay(daemon: Daemon) -> None:
    async with await Peer.open(daemon) as peer:
        a = await new_sid(peer, mode="chat")
        await peer.prompt(a, "remember me")
        b, c = await new_sid(peer, mode="chat"), await new_sid(peer, mode="chat")
        await detach(peer, a, b, c)  # as `zeroclaw chat` leaves them when it exits: idle
        # a fourth chat at the cap: the least recently used idle one (a) is unloaded, not refused
        d = await new_sid(peer, mode="chat")
        assert await live_flags(peer) == {a: False, b: True, c: True, d: True}
        assert (await peer.call("status"))["activeSessions"] == 3
        # it comes back on use, with its transcript (and b, now the least recent idle one, makes room)
        back = await peer.new_session(sessionId=a, mode="chat")
        assert back["resumed"] is True and back["messageCount"] == 2, back
        assert await user_lines(peer, a) == ["remember me"]
        turn = await peer.prompt(a, "and this")
        assert turn.result["stopReason"] == "end_turn", turn.result
        assert await user_lines(peer, a) == ["remember me", "and this"]
        assert await live_flags(peer) == {a: True, b: False, c: True, d: True}
        # busy (c runs a turn, nobody attached) and attached (a, d) are never unloaded: the limit answers
        mark, fut = await peer.start_prompt(c, "/sleep 2")
        await peer.wait_update("agent_message_chunk", session_id=c, start=mark)
        await peer.call("session/detach", {"sessionId": c})  # the prompter receives its turn without watching
        code, data = await peer.error("session/new", {"mode": "chat"})
        assert code == -32001 and data["kind"] == "session_limit", data
        await peer.finish_turn(c, mark, fut)
        # the turn is over and c idle: it makes room now
        e = await new_sid(peer, mode="chat")
        assert await live_flags(peer) == {a: True, b: False, c: False, d: True, e: True}
