"""R-MULTI-5 over a real socket: a chat session's provider context is bounded like an ACP session's.

With `[context] max_messages = 4`, a long chat is trimmed (`history_trimmed`, snapshot in `chat_snapshots`), the
scripted provider's `/context` shows it never got more than the budget, `session/messages` keeps every row, and a
restarted daemon rebuilds the bound from the chat snapshot. `session/delete` of an ACP session with the same id
leaves the chat's snapshot alone (R-ACP-10); a chat's own delete is a store unit (unit tests).
"""

from __future__ import annotations

import os
from typing import Any

import db_backend
import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, new_sid

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.req("R-MULTI-5"),
    pytest.mark.req("R-STORE-2"),
]

MAX_MESSAGES = 4
CONFIG = f"""\
[context]
max_messages = {MAX_MESSAGES}
max_chars = 2000
"""


async def context_lines(peer: Peer, sid: str) -> tuple[list[str], list[dict[str, Any]]]:
    """What the provider was given (`/context`), and the turn's `history_trimmed` updates."""
    turn = await peer.prompt(sid, "/context")
    assert turn.result["stopReason"] == "end_turn", turn.result
    return turn.result["content"].splitlines(), turn.of_type("history_trimmed")


def snapshots(daemon: Daemon, table: str, sid: str) -> int:
    rows = db_backend.query(daemon.database_url, f"SELECT count(*) FROM {table} WHERE session_id = :sid", sid=sid)
    return int(rows[0][0])


async def test_a_long_chat_is_bounded_complete_and_survives_a_restart(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer, mode="chat")
        trimmed: list[dict[str, Any]] = []
        for n in range(8):
            await peer.prompt(sid, f"question {n} " + "x" * 300)
            lines, trims = await context_lines(peer, sid)
            assert len(lines) <= MAX_MESSAGES and lines[-1] == "user: /context", (n, lines)
            trimmed += trims
        assert trimmed, "a long chat announces its trims"
        assert set(trimmed[0]) == {"sessionId", "type", "droppedMessages", "keptMessages", "checkpoint", "seq"}
        assert all(t["sessionId"] == sid and t["droppedMessages"] > 0 for t in trimmed), trimmed
        page = await peer.call("session/messages", {"sessionId": sid, "limit": 1000})
        assert page["total"] == 32 and [m["index"] for m in page["messages"]] == list(range(32))
        assert [m["content"][:10] for m in page["messages"][::4]] == [f"question {n}" for n in range(8)]
        assert snapshots(daemon, "chat_snapshots", sid) >= 1
    assert daemon.stop() == 0

    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as peer:
        opened = await peer.new_session(sessionId=sid, mode="chat")
        assert opened["resumed"] is True and opened["messageCount"] == 32, opened
        lines, trims = await context_lines(peer, sid)
        # the chat snapshot rules after the restart: only its two newest messages went, not 30 of 32
        assert [(t["droppedMessages"], t["checkpoint"]) for t in trims] == [(2, 31)], trims
        assert len(lines) == 3 and lines[0] == lines[2] == "user: /context", lines
        assert lines[1].startswith("assistant: user: question 7"), lines
        page = await peer.call("session/messages", {"sessionId": sid, "limit": 0})
        assert page["total"] == 34


async def test_an_acp_delete_leaves_the_chat_snapshot_of_the_same_id(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        for word in ("one", "two", "three"):
            await peer.prompt(sid, f"acp {word}")
        await peer.call("session/close", {"sessionId": sid})
        await peer.new_session(sessionId=sid, mode="chat")
        for word in ("one", "two", "three"):
            await peer.prompt(sid, f"chat {word}")
        assert (snapshots(daemon, "acp_snapshots", sid), snapshots(daemon, "chat_snapshots", sid)) == (1, 1)
        assert await peer.call("session/delete", {"sessionId": sid}) == {"sessionId": sid, "deleted": True}
        assert (snapshots(daemon, "acp_snapshots", sid), snapshots(daemon, "chat_snapshots", sid)) == (0, 1)
        lines, _trims = await context_lines(peer, sid)
        assert lines[:2] == ["user: chat three", "assistant: You said: «chat three»"], lines
