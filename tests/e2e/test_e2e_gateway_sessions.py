"""The session routes and the webhook of a real `zeroclaw daemon --gateway-port 0` (R-GW-2, R-GW-3, R-GW-6)."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """
[tools]
approval_timeout_secs = 60

[permission_profiles.admin]
admin = true

[permission_profiles.runner]
grants = { sessions = ["create", "execute", "read"] }
allowed_agents = ["*"]

[users.ops]
permission_profiles = ["admin"]

[users.alice]
permission_profiles = ["runner"]

[users.bob]
permission_profiles = ["runner"]
"""


def start(factory: DaemonFactory) -> tuple[Daemon, str]:
    d = factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


async def tokens(d: Daemon, *users: str) -> dict[str, str]:
    """Paired tokens, created by the owner over the local socket."""
    async with await d.client() as c:
        return {user: (await c.call("pairing/create", {"user": user}))["token"] for user in users}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.req("R-GW-2")
async def test_rest_session_routes(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    t = await tokens(d, "ops", "alice", "bob")
    async with await d.client(authToken=t["alice"]) as c:
        sid = (await c.call("session/new", {}))["sessionId"]
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http:
        response = await http.post(
            f"/api/sessions/{sid}/prompt", json={"prompt": "hello gateway"}, headers=bearer(t["alice"])
        )
        assert response.status_code == 200, response.text
        assert response.json() == {"sessionId": sid, "stopReason": "end_turn", "content": "You said: «hello gateway»"}

        listed = (await http.get("/api/sessions", headers=bearer(t["alice"]))).json()["sessions"]
        assert [(s["sessionId"], s["messageCount"]) for s in listed] == [(sid, 2)]
        messages = (await http.get(f"/api/sessions/{sid}/messages", headers=bearer(t["alice"]))).json()
        assert [(m["role"], m["content"]) for m in messages["messages"]] == [
            ("user", "hello gateway"),
            ("assistant", "You said: «hello gateway»"),
        ]

        # a non-owner token; then the owner principal (admin) may
        response = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "x"}, headers=bearer(t["bob"]))
        assert response.status_code == 403
        assert error_of(response)["kind"] == "session_not_owned"
        assert (await http.get(f"/api/sessions/{sid}/messages", headers=bearer(t["bob"]))).status_code == 403
        response = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "x"}, headers=bearer(t["ops"]))
        assert response.status_code == 200

        response = await http.post(f"/api/sessions/{sid}/prompt", json={"prompt": "x"})
        assert response.status_code == 401
        assert error_of(response)["kind"] == "auth_required"

        response = await http.post("/api/sessions/s_missing/prompt", json={"prompt": "x"}, headers=bearer(t["alice"]))
        assert response.status_code == 404
        assert error_of(response)["kind"] == "session_not_found"

        # no interactive client: a tool that needs approval is rejected at once, not after 60 s
        started = time.monotonic()
        response = await http.post(
            f"/api/sessions/{sid}/prompt", json={"prompt": "/bash echo hi"}, headers=bearer(t["alice"])
        )
        assert time.monotonic() - started < 10
        assert response.json()["stopReason"] == "end_turn" and "rejected" in response.json()["content"]

        spec = (await http.get("/openapi.json")).json()
        assert {"/api/sessions", "/api/sessions/{id}/messages", "/api/sessions/{id}/prompt", "/webhook/{agent}"} <= set(
            spec["paths"]
        )


@pytest.mark.req("R-GW-3")
async def test_webhook_chat_session(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    t = await tokens(d, "alice", "bob")
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http:
        first = await http.post("/webhook/default", json={"message": "remember this"}, headers=bearer(t["alice"]))
        assert first.status_code == 200, first.text
        sid = first.json()["sessionId"]
        assert first.json() == {"sessionId": sid, "content": "You said: «remember this»"}

        second = await http.post(
            "/webhook/default", json={"message": "/context", "sessionId": sid}, headers=bearer(t["alice"])
        )
        assert second.status_code == 200, second.text
        assert second.json()["sessionId"] == sid
        lines = second.json()["content"].splitlines()
        assert lines == ["user: remember this", "assistant: You said: «remember this»", "user: /context"]

        listed = (await http.get("/api/sessions", headers=bearer(t["alice"]))).json()["sessions"]
        assert [(s["sessionId"], s["mode"], s["messageCount"]) for s in listed] == [(sid, "chat", 4)]

        response = await http.post(
            "/webhook/default", json={"message": "mine now", "sessionId": sid}, headers=bearer(t["bob"])
        )
        assert response.status_code == 403
        assert error_of(response)["kind"] == "session_not_owned"

        response = await http.post("/webhook/default", json={"message": "x"})
        assert response.status_code == 401

        response = await http.post("/webhook/nosuch", json={"message": "x"}, headers=bearer(t["alice"]))
        assert response.status_code == 404

        response = await http.post(
            "/webhook/default", json={"message": "x" * (64 * 1024 + 1)}, headers=bearer(t["alice"])
        )
        assert response.status_code == 413
        assert error_of(response)["kind"] == "limit_exceeded"
        assert response.headers["server"] == "zeroclaw"

    async with await d.client() as c:  # the daemon's view: no live slot kept, rows written by the gateway
        status = await c.call("status")
        assert sid not in status["sessionIds"]
        messages = await c.call("session/messages", {"sessionId": sid})
        assert messages["total"] == 4
        # The owner is an admin: it may resume alice's chat session, which comes back as it was stored.
        resumed = await c.call("session/new", {"sessionId": sid, "mode": "chat"})
        assert (resumed["resumed"], resumed["messageCount"], resumed["mode"]) == (True, 4, "chat"), resumed
        prompted = await c.call("session/prompt", {"sessionId": sid, "prompt": "admin here"})
        assert prompted["content"] == "You said: «admin here»"
        await c.call("session/close", {"sessionId": sid})
        gone = await c.request("session/new", {"sessionId": sid, "mode": "chat"})
        assert gone["error"]["code"] == -32000, gone  # a closed chat session is gone (R-ACP-8)
