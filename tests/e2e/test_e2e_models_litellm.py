"""`models/list` and a `session/configure` model switch against a server this project did not write (R-MODEL-3,
R-MODEL-4, R-MODEL-7): LiteLLM's proxy (tests/litellm_proxy.py) lists its models, and a session switched from
`mock-model` (tests/litellm/zeroclaw_mock.py's replies) to `mock-text` (LiteLLM's own `mock_response`) is answered
by the other model from its next turn, through both provider kinds, and still after a daemon restart."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from e2e_harness import Daemon, DaemonFactory
from litellm_proxy import LiteLLM
from session_client import Peer, check_turn

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.req("R-MODEL-7"),
]

KINDS = ["openai", "anthropic"]


@pytest.fixture(scope="module")
def lite_factory() -> Iterator[DaemonFactory]:
    factory = DaemonFactory()
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="module")
def lite_daemon(litellm: LiteLLM, lite_factory: DaemonFactory) -> Daemon:
    config = ""
    for kind, base in (("openai", f"{litellm.base_url}/v1"), ("anthropic", litellm.base_url)):
        config += f"""
[providers.lite-{kind}]
kind = "{kind}"
base_url = "{base}"
model = "mock-model"
api_key_env = "ZEROCLAW_TEST_LITELLM_KEY"
timeout_secs = 10

[agents.lite-{kind}]
provider = "lite-{kind}"
"""
    return lite_factory.start(config, env=environment(litellm))


def environment(litellm: LiteLLM) -> dict[str, str]:
    return {
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "ZEROCLAW_TEST_LITELLM_KEY": litellm.key,
    }


@pytest.mark.req("R-MODEL-3")
@pytest.mark.req("R-MODEL-4")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_configured_model_switch_reaches_the_real_server(
    lite_daemon: Daemon, lite_factory: DaemonFactory, litellm: LiteLLM, kind: str
) -> None:
    agent = f"lite-{kind}"
    async with await Peer.open(lite_daemon) as owner:
        listing = await owner.call("models/list", {"agentAlias": agent})
        assert listing["current"] == "mock-model" and "error" not in listing, listing
        ids = {m["id"] for m in listing["models"]}
        assert {"mock-model", "mock-text", "mock-ratelimited"} <= ids
        assert {m["provider"] for m in listing["models"]} == {agent}

        opened = await owner.new_session(agentAlias=agent)
        sid = opened["sessionId"]
        assert opened["model"] == "mock-model"
        turn = await owner.prompt(sid, "good morning")
        assert check_turn(turn, sid)["content"] == "Hello from LiteLLM: «good morning»"

        settings = await owner.call("session/configure", {"sessionId": sid, "model": "mock-text", "temperature": 0.2})
        assert (settings["model"], settings["temperature"]) == ("mock-text", 0.2)
        turn = await owner.prompt(sid, "good evening")
        assert check_turn(turn, sid)["content"] == "Plain mock reply from LiteLLM."

    if kind != KINDS[-1]:
        return
    # A restart keeps the switch (the last parametrization: the module's daemon is not used after it).
    assert lite_daemon.stop() == 0
    again = lite_factory.start(config_dir=lite_daemon.config_dir, root=lite_daemon.root, env=environment(litellm))
    async with await Peer.open(again) as owner:
        turn = await owner.prompt(sid, "good night")
        assert check_turn(turn, sid)["content"] == "Plain mock reply from LiteLLM."
