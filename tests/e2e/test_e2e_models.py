"""`models/list` and `session/configure` over the real socket (R-MODEL-3, R-MODEL-4): the settings are stored with
the session (a restart keeps them, both backends), reach the provider from the next turn (the scripted provider's
`/model` answers what it was built with), are announced to followers as `config_changed`, and are shown by
`session/list` and `session/new`."""

from __future__ import annotations

import os

import httpx
import pytest
from e2e_harness import READY_RE, DaemonFactory
from session_client import Peer, check_turn, open_token_peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """
[providers.warm]
kind = "scripted"
model = "warm-1"
temperature = 0.7

[agents.other]
provider = "warm"

[permission_profiles.default_only]
grants = { sessions = ["create", "read", "update", "delete", "execute"] }
allowed_agents = ["default"]

[users.bob]
permission_profiles = ["default_only"]
"""


async def model_of(peer: Peer, sid: str) -> str:
    turn = await peer.prompt(sid, "/model")
    return str(check_turn(turn, sid)["content"])


@pytest.mark.req("R-MODEL-4")
async def test_configure_is_stored_announced_listed_and_reaches_the_provider(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as watcher:
        opened = await owner.new_session()
        sid = opened["sessionId"]
        assert (opened["model"], opened["temperature"]) == ("scripted", None)
        assert await model_of(owner, sid) == "model: scripted, temperature: default"
        await watcher.call("session/attach", {"sessionId": sid})
        mark = len(watcher.updates)

        settings = await owner.call("session/configure", {"sessionId": sid, "model": "big-1", "temperature": 0.3})
        assert settings == {"sessionId": sid, "agentAlias": "default", "model": "big-1", "temperature": 0.3}
        changed = await watcher.wait_update("config_changed", start=mark)
        assert {k: changed[k] for k in ("sessionId", "agentAlias", "model", "temperature")} == settings
        assert await model_of(owner, sid) == "model: big-1, temperature: 0.3"
        (entry,) = [e for e in (await owner.call("session/list"))["sessions"] if e["sessionId"] == sid]
        assert (entry["agentAlias"], entry["model"], entry["temperature"]) == ("default", "big-1", 0.3)

        # another agent: its own model and temperature, unless named
        switched = await owner.call("session/configure", {"sessionId": sid, "agentAlias": "other"})
        assert (switched["agentAlias"], switched["model"], switched["temperature"]) == ("other", "warm-1", 0.3)
        assert await model_of(owner, sid) == "model: warm-1, temperature: 0.3"
        reset = await owner.call("session/configure", {"sessionId": sid, "temperature": None})
        assert reset["temperature"] == 0.7

        code, data = await owner.error("session/configure", {"sessionId": sid, "agentAlias": "nobody"})
        assert code == -32602 and data["errors"][0]["field"] == "agentAlias", data
        code, _ = await owner.error("session/configure", {"sessionId": sid, "temperature": 3})
        assert code == -32602
        code, _ = await owner.error("session/configure", {"sessionId": "s_none", "model": "x"})
        assert code == -32000
        async with await open_token_peer(daemon, owner, "bob") as bob:
            code, _ = await bob.error("session/configure", {"sessionId": sid, "model": "x"})
            assert code == -32003
            bobs = (await bob.new_session())["sessionId"]
            code, data = await bob.error("session/configure", {"sessionId": bobs, "agentAlias": "other"})
            assert code == -32012, data
        await owner.call("session/configure", {"sessionId": sid, "model": "kept-2"})

    assert daemon.stop() == 0
    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as owner:
        (entry,) = [e for e in (await owner.call("session/list"))["sessions"] if e["sessionId"] == sid]
        assert (entry["agentAlias"], entry["model"], entry["temperature"]) == ("other", "kept-2", 0.7)
        (durable,) = [e for e in (await owner.call("session/list-acp"))["sessions"] if e["sessionId"] == sid]
        assert durable == entry
        assert await model_of(owner, sid) == "model: kept-2, temperature: 0.7"
        resumed = await owner.new_session(sessionId=sid)
        assert (resumed["agentAlias"], resumed["model"], resumed["resumed"]) == ("other", "kept-2", True)


@pytest.mark.req("R-MODEL-3")
async def test_models_list_gives_the_agents_models_and_refuses_unknown_agents(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        assert await owner.call("models/list") == {
            "models": [{"id": "scripted", "provider": "scripted"}],
            "current": "scripted",
        }
        other = await owner.call("models/list", {"agentAlias": "other"})
        assert other["current"] == "warm-1" and {m["id"] for m in other["models"]} == {"warm-1", "scripted"}
        code, data = await owner.error("models/list", {"agentAlias": "nobody"})
        assert code == -32602 and data["errors"][0]["field"] == "agentAlias", data
        async with await open_token_peer(daemon, owner, "bob") as bob:
            assert (await bob.call("models/list"))["current"] == "scripted"
            code, _ = await bob.error("models/list", {"agentAlias": "other"})
            assert code == -32012


@pytest.mark.req("R-MODEL-4")
@pytest.mark.req("R-GW-2")
async def test_rest_twins_patch_a_session_and_list_models(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert daemon.ready_line is not None
    match = READY_RE.match(daemon.ready_line)
    assert match is not None and match["gateway"] != "off", daemon.ready_line
    async with await Peer.open(daemon) as owner:
        token = (await owner.call("pairing/create", {"user": "bob"}))["token"]
        async with await open_token_peer(daemon, owner, "bob") as bob:
            sid = (await bob.new_session())["sessionId"]
            await bob.call("session/attach", {"sessionId": sid})
            mark = len(bob.updates)
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=match["gateway"], headers=headers, trust_env=False) as http:
                patched = await http.patch(f"/api/sessions/{sid}", json={"model": "rest-1", "temperature": 1.25})
                assert patched.status_code == 200, patched.text
                assert patched.json() == {"sessionId": sid, "agentAlias": "default", "model": "rest-1",
                                          "temperature": 1.25}  # fmt: skip
                changed = await bob.wait_update("config_changed", start=mark)
                assert (changed["model"], changed["temperature"]) == ("rest-1", 1.25)
                listed = (await http.get("/api/sessions")).json()["sessions"]
                assert [(e["sessionId"], e["model"]) for e in listed] == [(sid, "rest-1")]
                refused = await http.patch(f"/api/sessions/{sid}", json={"agentAlias": "other"})
                assert refused.status_code == 403, refused.text
                unknown = await http.patch(f"/api/sessions/{sid}", json={"agentAlias": "nobody"})
                assert unknown.status_code == 400 and unknown.json()["error"]["kind"] == "invalid_params"
                missing = await http.patch("/api/sessions/s_none", json={"model": "x"})
                assert missing.status_code == 404, missing.text
                models = await http.get("/api/models")
                assert models.status_code == 200 and models.json()["current"] == "scripted", models.text
                assert (await http.get("/api/models", params={"agentAlias": "other"})).status_code == 403
            assert await model_of(bob, sid) == "model: rest-1, temperature: 1.25"
