"""Tokens and cost per turn on a real daemon (R-MODEL-5), offline through the scripted provider's word counts.

The scripted provider counts whitespace-separated words: input, the words of every message it was given; output, the
words it streamed and its tool calls' argument values. Priced at $1 per input word and $2 per output word, the
numbers are exact in binary floating point.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest
from acp import text_block
from acp.schema import UsageUpdate
from acp_harness import TIMEOUT, initialized, open_acp
from e2e_harness import READY_RE, DaemonFactory
from prometheus_client.parser import text_string_to_metric_families
from session_client import Peer, check_turn, new_sid

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """\
[providers.scripted.pricing]
input_per_mtok = 1000000
output_per_mtok = 2000000

[providers.free]
kind = "scripted"

[agents.auto]
auto_approve = ["bash"]

[agents.unpriced]
provider = "free"
"""


def _usage(inputs: int, outputs: int, cost: float | None) -> dict[str, Any]:
    return {
        "inputTokens": inputs,
        "outputTokens": outputs,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "costUsd": cost,
    }


@pytest.mark.req("R-MODEL-5")
async def test_each_step_reports_usage_summed_in_turn_complete_stored_and_totalled_across_a_restart(
    daemon_factory: DaemonFactory,
) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner, agentAlias="auto")
        turn = await owner.prompt(sid, "the quick brown fox")  # -> "You said: «the quick brown fox»": 6 words
        check_turn(turn, sid)
        (step,) = turn.of_type("usage")
        assert turn.types[-2:] == ["usage", "turn_complete"]  # the step's usage, then the turn's end
        assert {k: step[k] for k in _usage(0, 0, None)} == _usage(4, 6, 16.0)
        assert turn.updates[-1]["usage"] == _usage(4, 6, 16.0)

        # Two provider steps: the tool call, then the text after its result; each step counted on its own.
        tool_turn = await owner.prompt(sid, "/bash echo hi there")
        check_turn(tool_turn, sid)
        steps = tool_turn.of_type("usage")
        assert len(steps) == 2, tool_turn.types
        assert (
            tool_turn.types.index("usage") < tool_turn.types.index("tool_call") < tool_turn.types.index("tool_result")
        )
        total = tool_turn.updates[-1]["usage"]
        assert total["inputTokens"] == steps[0]["inputTokens"] + steps[1]["inputTokens"]
        assert total["costUsd"] == steps[0]["costUsd"] + steps[1]["costUsd"]

        answer = await owner.call("session/usage", {"sessionId": sid})
        assert [t["index"] for t in answer["turns"]] == [0, 1]
        first, second = answer["turns"]
        assert {k: first[k] for k in _usage(0, 0, None)} == _usage(4, 6, 16.0)
        assert first["provider"] == "scripted" and first["model"] is None and first["steps"] == 1
        assert second["steps"] == 2 and second["outputTokens"] == total["outputTokens"]
        assert answer["total"]["inputTokens"] == 4 + total["inputTokens"]
        assert answer["total"]["costUsd"] == 16.0 + total["costUsd"]
    assert daemon.stop() == 0

    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as owner:
        assert await owner.call("session/usage", {"sessionId": sid}) == answer  # stored, not remembered


@pytest.mark.req("R-MODEL-5")
async def test_an_unpriced_provider_costs_null(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner, agentAlias="unpriced")
        turn = await owner.prompt(sid, "one two three")
        check_turn(turn, sid)
        assert turn.updates[-1]["usage"] == _usage(3, 5, None)
        answer = await owner.call("session/usage", {"sessionId": sid})
        assert answer["total"] == _usage(3, 5, None)
        assert answer["turns"][0]["provider"] == "free" and answer["turns"][0]["costUsd"] is None


@pytest.mark.req("R-MODEL-5")
async def test_metrics_count_each_providers_tokens_and_cost(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        priced, free = await new_sid(owner), await new_sid(owner, agentAlias="unpriced")
        check_turn(await owner.prompt(priced, "the quick brown fox"), priced)
        check_turn(await owner.prompt(free, "one two three"), free)
        text = await owner.call("system/metrics", {})
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    tokens = "zeroclaw_provider_tokens_total"
    assert found[tokens, (("kind", "input"), ("model", ""), ("provider", "scripted"))] == 4
    assert found[tokens, (("kind", "output"), ("model", ""), ("provider", "scripted"))] == 6
    assert found[tokens, (("kind", "cache_read"), ("model", ""), ("provider", "scripted"))] == 0
    assert found[tokens, (("kind", "input"), ("model", ""), ("provider", "free"))] == 3
    cost = "zeroclaw_provider_cost_usd_total"
    assert found[cost, (("model", ""), ("provider", "scripted"))] == 16.0
    assert (cost, (("model", ""), ("provider", "free"))) not in found  # unpriced: no dollars made up


@pytest.mark.req("R-MODEL-5")
async def test_session_usage_is_the_owners_and_empty_before_any_turn(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        assert await owner.call("session/usage", {"sessionId": sid}) == {
            "sessionId": sid,
            "total": _usage(0, 0, None),
            "turns": [],
        }
        _code, data = await owner.error("session/usage", {"sessionId": "no-such-session"})
        assert data["kind"] == "session_not_found", data


@pytest.mark.req("R-MODEL-5")
async def test_an_acp_client_gets_usage_update_with_the_sessions_running_cost(daemon_factory: DaemonFactory) -> None:
    """Through the ACP SDK's own client: each step a `usage_update` it parses, `used` the step's context tokens,
    `cost` the session's running cost in USD."""
    daemon = daemon_factory.start(CONFIG)
    project = daemon.root / "project"
    project.mkdir()
    async with open_acp(daemon) as (conn, recorder, _process):
        await initialized(conn)
        sid = (await asyncio.wait_for(conn.new_session(cwd=str(project), mcp_servers=[]), TIMEOUT)).session_id
        for _ in range(2):
            answer = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("the quick brown fox")]), TIMEOUT
            )
            assert answer.stop_reason == "end_turn"
        first, second = recorder.of(sid, UsageUpdate)
        assert (first.used, first.size) == (4 + 6, 0)  # the context window is not known: 0
        assert first.cost is not None and (first.cost.amount, first.cost.currency) == (16.0, "USD")
        # The second turn's context holds the first: 4 + 6 + 4 words in, 6 out; the cost runs on: 16 + 14 + 12.
        assert second.used == 14 + 6
        assert second.cost is not None and second.cost.amount == 42.0
        assert second.field_meta == {"zeroclaw.usage": {**_usage(14, 6, 26.0)}}


@pytest.mark.req("R-MODEL-5")
@pytest.mark.req("R-GW-2")
async def test_the_gateway_shows_usage_over_rest(daemon_factory: DaemonFactory) -> None:
    """`GET /api/sessions/{id}/usage` is session/usage through the dispatcher, with its grant and ownership (the
    WebSocket's `usage` updates: test_e2e_gateway.py)."""
    config = CONFIG + '\n[permission_profiles.runner]\ngrants = { sessions = ["create", "execute", "read"] }\n'
    config += 'allowed_agents = ["*"]\n\n[users.alice]\npermission_profiles = ["runner"]\n'
    config += '\n[users.bob]\npermission_profiles = ["runner"]\n'
    daemon = daemon_factory.start(config, no_gateway=False, args=["--gateway-port", "0"])
    ready = READY_RE.match(daemon.ready_line or "")
    assert ready is not None and ready["gateway"] != "off", daemon.ready_line
    async with await daemon.client() as owner:
        alice, bob = [(await owner.call("pairing/create", {"user": u}))["token"] for u in ("alice", "bob")]
    async with await daemon.client(authToken=alice) as c:
        sid = (await c.call("session/new", {}))["sessionId"]
    async with httpx.AsyncClient(base_url=ready["gateway"], trust_env=False, timeout=30) as http:
        auth = {"Authorization": f"Bearer {alice}"}
        prompted = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "the quick brown fox"}, headers=auth)
        assert prompted.status_code == 200, prompted.text
        usage = await http.get(f"/api/sessions/{sid}/usage", headers=auth)
        assert usage.status_code == 200, usage.text
        answer = usage.json()
        assert answer["sessionId"] == sid and answer["total"] == _usage(4, 6, 16.0)
        assert [(t["index"], t["provider"], t["steps"]) for t in answer["turns"]] == [(0, "scripted", 1)]
        other = await http.get(f"/api/sessions/{sid}/usage", headers={"Authorization": f"Bearer {bob}"})
        assert other.status_code == 403 and other.json()["error"]["kind"] == "session_not_owned", other.text
