"""Steering a running turn over a real socket (SPEC §24, R-BRANCH-3), seen from outside.

The turn's first step calls `bash`, which waits for its approval; a second attached connection steers meanwhile with
`/context`. The scripted provider answers the last user message, so the turn's next step printing its context (with
the steer as the last message) shows that the model got the steer before the turn's last step. The steer is a user
row of the turn at the index it answered, a `user_message` update on both connections, and survives a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from e2e_harness import DaemonFactory
from session_client import Peer, new_sid

pytestmark = pytest.mark.req("R-BRANCH-3")


@pytest.fixture(scope="module")
def factory() -> Iterator[DaemonFactory]:
    made = DaemonFactory()
    try:
        yield made
    finally:
        made.close()


async def rows_of(peer: Peer, sid: str) -> list[dict[str, Any]]:
    return (await peer.call("session/messages", {"sessionId": sid, "limit": 1000}))["messages"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["acp", "chat"])
async def test_a_steer_from_another_connection_reaches_the_model_in_the_same_turn_and_survives_a_restart(
    factory: DaemonFactory, mode: str
) -> None:
    daemon = factory.start("")
    async with await Peer.open(daemon) as prompter, await Peer.open(daemon) as steerer:
        sid = await new_sid(prompter, mode=mode)
        await steerer.call("session/attach", {"sessionId": sid})
        mark, running = await prompter.start_prompt(sid, "/bash echo before-the-steer")
        asked = await steerer.wait_update("approval_request", session_id=sid)
        steered = await steerer.start("session/steer", {"sessionId": sid, "prompt": "/context"})
        await steerer.call("status")  # a barrier: the steer was read and offered before the approval goes
        approve = {"sessionId": sid, "requestId": asked["requestId"], "decision": "allow_once"}
        assert (await steerer.call("session/approve", approve))["acknowledged"] is True
        answer = (await steered)["result"]
        assert answer == {"accepted": True, "index": 3}, answer  # prompt 0, tool call 1, its result 2
        turn = await prompter.finish_turn(sid, mark, running)
        assert turn.result["stopReason"] == "end_turn", turn.result
        # The step after the tool call was given the steer: its answer is the context it saw, the steer last.
        seen = turn.result["content"].splitlines()
        assert seen[0] == "user: /bash echo before-the-steer" and seen[-1] == "user: /context", seen
        assert seen[-2].startswith("tool: before-the-steer"), seen
        for peer in (prompter, steerer):
            update = await peer.wait_update("user_message", session_id=sid)
            assert (update["text"], update["index"]) == ("/context", 3), update
        assert turn.types.index("user_message") < turn.types.index("turn_complete")
        rows = await rows_of(prompter, sid)
        assert [(r["index"], r["role"]) for r in rows] == [
            (0, "user"), (1, "tool_call"), (2, "tool_result"), (3, "user"), (4, "assistant")
        ]  # fmt: skip
        assert rows[3]["content"] == "/context"
        # A fork is at a turn's prompt: the steer is inside a turn (R-BRANCH-1).
        code, data = await prompter.error("session/fork", {"sessionId": sid, "atIndex": 3})
        assert code == -32602 and data["errors"][0]["field"] == "atIndex", data
        # The turn ended: nothing to steer, the client prompts instead.
        code, data = await steerer.error("session/steer", {"sessionId": sid, "prompt": "late"})
        assert code == -32602 and data["errors"][0]["field"] == "sessionId", data
    assert daemon.stop() == 0

    daemon = factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as peer:
        opened = await peer.new_session(sessionId=sid, mode=mode)
        assert opened["resumed"] is True and opened["messageCount"] == 5, opened
        assert [r["content"] for r in await rows_of(peer, sid)][3] == "/context"
        again = (await peer.prompt(sid, "/context")).result["content"].splitlines()
        assert again[3] == "user: /context" and again[-1] == "user: /context", again
    assert daemon.stop() == 0


async def test_a_steer_the_turn_never_takes_answers_accepted_false(factory: DaemonFactory) -> None:
    daemon = factory.start("")
    async with await Peer.open(daemon) as prompter, await Peer.open(daemon) as steerer:
        sid = await new_sid(prompter)
        await steerer.call("session/attach", {"sessionId": sid})
        mark, running = await prompter.start_prompt(sid, "/bash echo never")
        await steerer.wait_update("approval_request", session_id=sid)
        steered = await steerer.start("session/steer", {"sessionId": sid, "prompt": "too late"})
        await steerer.call("status")  # the steer waits for the next step
        await prompter.call("session/cancel", {"sessionId": sid})  # the turn ends first
        assert (await steered)["result"] == {"accepted": False}
        assert (await prompter.finish_turn(sid, mark, running)).result["stopReason"] == "cancelled"
        assert "too late" not in [r["content"] for r in await rows_of(prompter, sid)]
