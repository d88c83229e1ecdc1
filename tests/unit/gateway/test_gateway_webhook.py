"""`POST /webhook/{agent}` over httpx's ASGI transport (R-GW-3, R-GW-6, R-ACP-7)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_env import build_env, close_env
from test_gateway_sessions import SESSIONS_TOML, SessionsEnv, error_of, senv

__all__ = ["senv"]  # the fixture, shared with the session routes' tests


@pytest.mark.req("R-GW-3")
async def test_webhook_creates_a_gateway_chat_session(senv: SessionsEnv) -> None:
    response = await senv.post("ann", "/webhook/default", json={"message": "hello hook"})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    sid = body["sessionId"]
    assert body == {"sessionId": sid, "content": "You said: «hello hook»"}
    store = senv.sessions.store
    record = await store.get(sid, mode="chat")
    assert record is not None
    assert (record.mode, record.surface, record.owner, record.agent_alias) == ("chat", "gateway", "user:ann", "default")
    assert await store.get(sid) is None  # no ACP row
    rows, total = await store.transcript.messages(sid, mode="chat")
    assert total == 2
    assert [(r.role, r.surface) for r in rows] == [("user", "gateway"), ("assistant", "gateway")]


@pytest.mark.req("R-GW-3")
async def test_webhook_continues_a_session_and_holds_no_live_slot(senv: SessionsEnv) -> None:
    first = (await senv.post("ann", "/webhook/default", json={"message": "remember me"})).json()
    sid = first["sessionId"]
    assert sid not in senv.sessions.live  # released after its turn; the chat record stays open
    second = await senv.post("ann", "/webhook/default", json={"message": "/context", "sessionId": sid})
    assert second.status_code == 200, second.text
    assert second.json()["sessionId"] == sid
    assert second.json()["content"].splitlines() == [
        "user: remember me",
        "assistant: You said: «remember me»",
        "user: /context",
    ]
    listed = (await senv.get("ann", "/api/sessions")).json()["sessions"]
    assert [(s["sessionId"], s["mode"], s["live"], s["messageCount"]) for s in listed] == [(sid, "chat", False, 4)]
    messages = (await senv.get("ann", f"/api/sessions/{sid}/messages")).json()
    assert messages["total"] == 4 and messages["messages"][0]["content"] == "remember me"


class _Attached:
    """A connection watching a session (it never reads: nothing is sent while the session is idle)."""

    closed = False
    principal_id = "bob"

    async def send_updates(self, updates: Any, frames: Any = None) -> None:
        pass

    def drop(self) -> None:
        pass


@pytest.mark.req("R-GW-3")
async def test_webhook_conversations_do_not_use_up_max_sessions(tmp_path: Path) -> None:
    env = await build_env(tmp_path / "cfg", SESSIONS_TOML + "\n[limits]\nmax_sessions = 1\n")
    transport = httpx.ASGITransport(app=env.app, client=("127.0.0.1", 50000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            s = SessionsEnv(env, client)
            ids = set()
            for i in range(3):
                response = await s.post("ann", "/webhook/default", json={"message": f"n{i}"})
                assert response.status_code == 200, response.text
                ids.add(response.json()["sessionId"])
            assert len(ids) == 3 and env.services.sessions.live == {}
            # while one attached ACP session holds the only slot, a webhook call gets the limit error (an idle
            # one would be unloaded to make room: SPEC §5 `max_sessions`)
            env.services.sessions.live[await s.open("bob")].watch(_Attached())
            response = await s.post("ann", "/webhook/default", json={"message": "full"})
            assert response.status_code == 429
            assert error_of(response)["kind"] == "session_limit"
    finally:
        await close_env(env)


@pytest.mark.req("R-GW-3")
async def test_webhook_with_an_unknown_session_id_creates_it(senv: SessionsEnv) -> None:
    response = await senv.post("ann", "/webhook/helper", json={"message": "hi", "sessionId": "ticket-42"})
    assert response.status_code == 200, response.text
    assert response.json()["sessionId"] == "ticket-42"
    record = await senv.sessions.store.get("ticket-42", mode="chat")
    assert record is not None and record.agent_alias == "helper" and record.owner == "user:ann"


@pytest.mark.req("R-GW-3")
async def test_webhook_continues_a_live_chat_session_and_keeps_it_live(senv: SessionsEnv) -> None:
    sid = await senv.open("ann", mode="chat", surface="gateway")
    response = await senv.post("ann", "/webhook/default", json={"message": "hi", "sessionId": sid})
    assert response.status_code == 200
    assert sid in senv.sessions.live


@pytest.mark.req("R-SES-1")
async def test_webhook_session_must_be_the_callers_chat_session_of_that_agent(senv: SessionsEnv) -> None:
    bobs = (await senv.post("bob", "/webhook/default", json={"message": "mine"})).json()["sessionId"]
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": bobs})
    assert response.status_code == 403
    assert error_of(response)["kind"] == "session_not_owned"
    live_bobs = await senv.open("bob", mode="chat", surface="gateway")
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": live_bobs})
    assert response.status_code == 403

    acp = await senv.open("ann")
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": acp})
    assert response.status_code == 400
    assert error_of(response)["errors"] == [
        {"field": "sessionId", "type": "not_chat_session", "message": error_of(response)["message"]}
    ]
    await senv.sessions.close(senv.principal("ann"), acp)  # a stored (not live) ACP session: the same
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": acp})
    assert response.status_code == 400
    assert await senv.sessions.store.get(acp, mode="chat") is None

    anns = (await senv.post("ann", "/webhook/helper", json={"message": "helper chat"})).json()["sessionId"]
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": anns})
    assert response.status_code == 400
    assert error_of(response)["errors"][0]["type"] == "agent_mismatch"


@pytest.mark.req("R-ACP-8")
async def test_webhook_on_a_closed_chat_session_is_404(senv: SessionsEnv) -> None:
    sid = await senv.open("ann", mode="chat", surface="gateway")
    await senv.sessions.close(senv.principal("ann"), sid)
    response = await senv.post("ann", "/webhook/default", json={"message": "x", "sessionId": sid})
    assert response.status_code == 404
    assert error_of(response)["kind"] == "session_not_found"


@pytest.mark.req("R-GW-6")
async def test_webhook_needs_a_bearer_the_execute_grant_and_the_agent_right(senv: SessionsEnv) -> None:
    response = await senv.post(None, "/webhook/default", json={"message": "x"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert error_of(response)["kind"] == "auth_required"
    response = await senv.post("rita", "/webhook/default", json={"message": "x"})
    assert response.status_code == 403
    assert error_of(response)["grant"] == "sessions:execute"
    response = await senv.post("nora", "/webhook/helper", json={"message": "x"})
    assert response.status_code == 403
    assert error_of(response) == {"kind": "forbidden", "message": "The principal may not use this agent", "agent": True}
    # nora may not learn which agents exist; ann (allowed_agents = ["*"]) gets 404 for an unknown one
    assert (await senv.post("nora", "/webhook/nosuch", json={"message": "x"})).status_code == 403
    response = await senv.post("ann", "/webhook/nosuch", json={"message": "x"})
    assert response.status_code == 404
    assert error_of(response) == {"kind": "not_found", "message": "Unknown agent"}
    # nora has no sessions:create: the webhook does not need it
    assert (await senv.post("nora", "/webhook/default", json={"message": "x"})).status_code == 200
    senv.env.services.audit.flush()  # lines are written by the audit log's thread
    denied = [line for line in senv.env.services.paths.audit_log.read_text().splitlines() if '"denied"' in line]
    # the missing bearer (as -32010 is over RPC), rita (grant), nora twice (agent right): one line per refusal
    assert len(denied) == 4


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize(
    ("content", "kind", "fields"),
    [
        (b"nope", "invalid_request", None),
        (b'"text"', "invalid_request", None),
        (b"{}", "invalid_params", ["message"]),
        (b'{"message": ["x"]}', "invalid_params", ["message"]),
        (b'{"message": "x", "sessionId": "bad id"}', "invalid_params", ["sessionId"]),
    ],
)
async def test_webhook_invalid_body_is_400(
    senv: SessionsEnv, content: bytes, kind: str, fields: list[str] | None
) -> None:
    response = await senv.post("ann", "/webhook/default", content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["kind"] == kind
    if fields is not None:
        assert [e["field"] for e in error["errors"]] == fields
    assert senv.sessions.live == {}


@pytest.mark.req("R-GW-6")
async def test_webhook_body_over_64_kib_is_413(senv: SessionsEnv) -> None:
    big = {"message": "x" * (64 * 1024)}
    response = await senv.post("ann", "/webhook/default", json=big)
    assert response.status_code == 413
    assert error_of(response) == {
        "kind": "limit_exceeded",
        "message": "Request body too large",
        "name": "body",
        "limit": 65536,
    }

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": "'
        for _ in range(20):
            yield b"x" * 4096
        yield b'"}'

    response = await senv.post("ann", "/webhook/default", content=chunks())
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert senv.sessions.live == {}
    ok = await senv.post("ann", "/webhook/default", json={"message": "x" * (60 * 1024)})
    assert ok.status_code == 200


@pytest.mark.req("R-SES-2")
async def test_concurrent_webhook_calls_on_one_session_are_busy(senv: SessionsEnv) -> None:
    first, second = await asyncio.gather(
        senv.post("ann", "/webhook/default", json={"message": "/sleep 0.3", "sessionId": "conv-1"}),
        senv.post("ann", "/webhook/default", json={"message": "/sleep 0.3", "sessionId": "conv-1"}),
    )
    assert sorted([first.status_code, second.status_code]) == [200, 409]
    busy = first if first.status_code == 409 else second
    assert error_of(busy)["kind"] == "session_busy"


@pytest.mark.req("R-STREAM-3")
async def test_webhook_tools_needing_approval_are_rejected_at_once(senv: SessionsEnv) -> None:
    started = time.monotonic()
    response = await senv.post("ann", "/webhook/default", json={"message": "/bash echo nope"})
    assert time.monotonic() - started < 5  # approval_timeout_secs is 30
    assert "rejected" in response.json()["content"]
    trusted = await senv.post("ann", "/webhook/trusted", json={"message": "/bash echo yes-run"})
    assert trusted.json()["content"].startswith("Command output:\nyes-run\n")
