"""ACP model switching (R-MODEL-4, SPEC §19), driven by the ACP Python SDK's own client through `zeroclaw acp`: the
session's `configOptions` carry a `model` select (category `model`, its choices from `models/list`) beside the
agent; `session/set_config_option` and ACP's `session/set_model` switch it; both, and the agent switch, are stored
with the session and survive a daemon restart."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_harness import TIMEOUT, initialized, open_acp
from e2e_harness import Daemon, DaemonFactory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """\
[providers.warm]
kind = "scripted"
model = "warm-1"

[agents.default]
provider = "scripted"

[agents.second]
provider = "warm"
"""


def workdir(daemon: Daemon) -> str:
    path = daemon.root / "project"
    path.mkdir(exist_ok=True)
    return str(path)


async def said(conn: Any, recorder: Any, sid: str, text: str) -> str:
    before = len(recorder.text(sid))
    answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), TIMEOUT)
    assert answer.stop_reason == "end_turn"
    return str(recorder.text(sid)[before:])


def options(answer: Any) -> dict[str, dict[str, Any]]:
    return {o.model_dump(by_alias=True)["id"]: o.model_dump(by_alias=True) for o in answer.config_options}


@pytest.mark.req("R-MODEL-4")
async def test_the_sdk_client_sees_the_model_option_switches_it_and_it_survives_a_restart(
    daemon_factory: DaemonFactory,
) -> None:
    daemon = daemon_factory.start(CONFIG)
    cwd = workdir(daemon)
    async with open_acp(daemon) as (conn, recorder, _process):
        await initialized(conn)
        new = await conn.new_session(cwd=cwd, mcp_servers=[])
        sid = new.session_id
        shown = options(new)
        assert list(shown) == ["agent", "model"]
        model = shown["model"]
        assert (model["category"], model["type"], model["currentValue"]) == ("model", "select", "scripted")
        assert [o["value"] for o in model["options"]] == ["scripted"]
        raw_new = next(m for d, m in recorder.frames if d == "incoming" and m.get("result", {}).get("sessionId"))
        assert raw_new["result"]["models"] == {
            "currentModelId": "scripted",
            "availableModels": [{"modelId": "scripted", "name": "scripted"}],
        }

        switched = await conn.set_config_option(config_id="agent", session_id=sid, value="second")
        model = options(switched)["model"]
        assert model["currentValue"] == "warm-1" and [o["value"] for o in model["options"]] == ["warm-1", "scripted"]
        assert await said(conn, recorder, sid, "/model") == "model: warm-1, temperature: default"

        chosen = await conn.set_config_option(config_id="model", session_id=sid, value="scripted")
        assert options(chosen)["model"]["currentValue"] == "scripted"
        assert await said(conn, recorder, sid, "/model") == "model: scripted, temperature: default"
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id="model", session_id=sid, value="no-such-model")
        assert refused.value.code == -32602

        # ACP's `session/set_model` (the SDK has no method for it: its raw connection sends it)
        assert await conn._conn.send_request("session/set_model", {"sessionId": sid, "modelId": "warm-1"}) == {}
        assert await said(conn, recorder, sid, "/model") == "model: warm-1, temperature: default"
        with pytest.raises(RequestError) as refused:
            await conn._conn.send_request("session/set_model", {"sessionId": sid, "modelId": "nope"})
        assert refused.value.code == -32602

    assert daemon.stop() == 0
    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with open_acp(daemon) as (conn, recorder, _process):
        await initialized(conn)
        loaded = await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
        assert loaded is not None
        shown = options(loaded)
        assert shown["agent"]["currentValue"] == "second" and shown["model"]["currentValue"] == "warm-1"
        assert await said(conn, recorder, sid, "/model") == "model: warm-1, temperature: default"
