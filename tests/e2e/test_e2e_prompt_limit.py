"""The prompt length limit is `[limits] max_prompt_chars`, the same on every surface (R-LIM, R-WIRE-4).

The story: a prompt over 1,000,000 characters was refused with -32602 by a number written only in a params model;
no doc mentioned it and no config could change it. docs/limits.md lists it now (a unit test checks that every
`[limits]` key is there).
"""

from __future__ import annotations

import os

import httpx
import pytest
from e2e_harness import READY_RE, DaemonFactory
from session_client import Peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

LIMIT = 100
CONFIG = f"""\
[limits]
max_prompt_chars = {LIMIT}

[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]
"""


def too_long(data: dict[str, object], field: str, limit: int) -> None:
    assert data["kind"] == "invalid_params" and data["limit"] == limit, data
    errors = data["errors"]
    assert isinstance(errors, list) and [e["field"] for e in errors] == [field], data
    assert errors[0]["type"] == "string_too_long" and "max_prompt_chars" in errors[0]["message"], data


@pytest.mark.req("R-LIM")
@pytest.mark.req("R-WIRE-4")
async def test_a_prompt_over_max_prompt_chars_is_refused_and_one_at_it_runs(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG)
    async with await Peer.open(d) as peer:
        sid = (await peer.new_session())["sessionId"]
        code, data = await peer.error("session/prompt", {"sessionId": sid, "prompt": "x" * (LIMIT + 1)})
        assert code == -32602
        too_long(data, "prompt", LIMIT)
        turn = await peer.prompt(sid, "y" * LIMIT)
        assert turn.result["stopReason"] == "end_turn", turn.response
        # a live change applies to the next prompt
        await peer.call("config/set", {"prop": "limits.max_prompt_chars", "value": LIMIT + 10})
        assert (await peer.prompt(sid, "z" * (LIMIT + 10))).result["stopReason"] == "end_turn"
        code, data = await peer.error("session/prompt", {"sessionId": sid, "prompt": "z" * (LIMIT + 11)})
        assert code == -32602
        too_long(data, "prompt", LIMIT + 10)
        # params are checked before the session: an unknown session with a long prompt is still -32602
        code, _ = await peer.error("session/prompt", {"sessionId": "s_nope", "prompt": "z" * (LIMIT + 11)})
        assert code == -32602


@pytest.mark.req("R-LIM")
async def test_the_default_limit_is_one_million_characters(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start()
    async with await Peer.open(d) as peer:
        sid = (await peer.new_session())["sessionId"]
        code, data = await peer.error("session/prompt", {"sessionId": sid, "prompt": "x" * 1_000_001})
        assert code == -32602
        too_long(data, "prompt", 1_000_000)


@pytest.mark.req("R-LIM")
@pytest.mark.req("R-GW-6")
async def test_rest_prompt_and_webhook_share_the_limit(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off"
    async with await Peer.open(d) as owner:
        token = (await owner.call("pairing/create", {"user": "ops"}))["token"]
    async with await Peer.open(d, token=token) as ops:
        sid = (await ops.new_session())["sessionId"]  # a durable ACP session the REST route may prompt
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=m["gateway"], trust_env=False, timeout=10) as http:
        response = await http.post("/webhook/default", json={"message": "x" * (LIMIT + 1)}, headers=auth)
        assert response.status_code == 400, response.text
        too_long(response.json()["error"], "message", LIMIT)
        response = await http.post("/webhook/default", json={"message": "x" * LIMIT}, headers=auth)
        assert response.status_code == 200, response.text
        response = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "x" * (LIMIT + 1)}, headers=auth)
        assert response.status_code == 400, response.text
        too_long(response.json()["error"], "prompt", LIMIT)
        response = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "x" * LIMIT}, headers=auth)
        assert response.status_code == 200, response.text
