"""`session/steer` (R-BRANCH-3) over the in-memory transport and the real services (`gateway_env`, assembled as the
daemon does): two connections of the owner on one session; the second steers the first's turn while it waits for an
approval, and is answered `{accepted:true, index}` once the turn takes the text; both are sent `user_message`; with
no turn running the call is `-32602` naming `sessionId`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_env import Env, build_env, close_env

from rpc.transports.memory import MemoryTransport

pytestmark = pytest.mark.req("R-BRANCH-3")


@pytest.fixture
async def env(tmp_path: Path) -> Any:
    made = await build_env(tmp_path / "env", "")
    yield made
    await close_env(made)


class Peer:
    """One connection: what it was sent, in order, kept; `seen` waits for the first frame that matches."""

    def __init__(self, env: Env) -> None:
        self.t = MemoryTransport(env.server)
        self.frames: list[dict[str, Any]] = []

    def send(self, rid: str, method: str, params: dict[str, Any]) -> None:
        self.t.feed({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    async def seen(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for frame in self.frames:
            if match(frame):
                return frame
        while True:
            frame = await self.t.next_message(timeout=10)
            self.frames.append(frame)
            if match(frame):
                return frame

    async def answer(self, rid: str) -> dict[str, Any]:
        return await self.seen(lambda f: f.get("id") == rid and "method" not in f)

    async def update(self, kind: str) -> dict[str, Any]:
        frame = await self.seen(lambda f: f.get("method") == "session/update" and f["params"]["type"] == kind)
        return dict(frame["params"])


async def peer(env: Env) -> Peer:
    p = Peer(env)
    p.send("init", "initialize", {"protocolVersion": 1})
    assert "result" in await p.answer("init")
    return p


async def test_a_steer_from_a_second_connection_joins_the_turn_and_both_are_told(env: Env) -> None:
    a, b = await peer(env), await peer(env)
    a.send("new", "session/new", {})
    sid = (await a.answer("new"))["result"]["sessionId"]
    b.send("attach", "session/attach", {"sessionId": sid})
    assert "result" in await b.answer("attach")
    a.send("prompt", "session/prompt", {"sessionId": sid, "prompt": "/bash echo in-memory"})
    asked = await b.update("approval_request")
    b.send("steer", "session/steer", {"sessionId": sid, "prompt": "/context"})
    b.send("approve", "session/approve", {"sessionId": sid, "requestId": asked["requestId"], "decision": "allow_once"})
    assert (await b.answer("steer"))["result"] == {"accepted": True, "index": 3}
    for p in (a, b):
        joined = await p.update("user_message")
        assert joined == {
            "sessionId": sid,
            "type": "user_message",
            "text": "/context",
            "index": 3,
            "seq": joined["seq"],
        }
    done = (await a.answer("prompt"))["result"]
    assert done["content"].splitlines()[-1] == "user: /context", done
    b.send("late", "session/steer", {"sessionId": sid, "prompt": "late"})
    error = (await b.answer("late"))["error"]
    assert error["code"] == -32602 and error["data"]["errors"][0]["field"] == "sessionId", error
