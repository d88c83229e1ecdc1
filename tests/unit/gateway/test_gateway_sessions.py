"""The session routes of the REST surface over httpx's ASGI transport (R-GW-2, R-SES-1, R-STREAM-3)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_env import Env, build_env, close_env
from waiting import until

from app.auth.policy import Principal

SESSIONS_TOML = """\
[tools]
approval_timeout_secs = 30

[permission_profiles.admin]
admin = true

[permission_profiles.runner]
grants = { sessions = ["create", "execute", "read"] }
allowed_agents = ["*"]

[permission_profiles.reader]
grants = { system = ["read"] }
allowed_agents = ["*"]

[permission_profiles.narrow]
grants = { sessions = ["execute", "read"] }
allowed_agents = ["default"]

[users.boss]
permission_profiles = ["admin"]

[users.ann]
permission_profiles = ["runner"]

[users.bob]
permission_profiles = ["runner"]

[users.rita]
permission_profiles = ["reader"]

[users.nora]
permission_profiles = ["narrow"]

[agents.default]

[agents.helper]

[agents.trusted]
auto_approve = ["bash"]
"""


class SessionsEnv:
    """An env with session users: boss (admin), ann and bob (sessions:*), rita (no sessions grant), nora
    (sessions:execute/read, agent `default` only); agents default, helper, trusted (bash auto-approved)."""

    def __init__(self, env: Env, client: httpx.AsyncClient) -> None:
        self.env = env
        self.client = client
        self.tokens: dict[str, str] = {}

    @property
    def sessions(self) -> Any:
        return self.env.services.sessions

    def principal(self, user: str) -> Principal:
        principal = self.env.services.auth.policy().for_user(user)
        assert principal is not None
        return principal

    async def headers(self, user: str) -> dict[str, str]:
        if user not in self.tokens:
            _, self.tokens[user] = await self.env.token(user)
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    async def open(self, user: str, **kw: Any) -> str:
        opened = await self.sessions.open(self.principal(user), **kw)
        session_id: str = opened.session.session_id
        return session_id

    async def get(self, user: str | None, path: str, **kw: Any) -> httpx.Response:
        headers = await self.headers(user) if user else {}
        return await self.client.get(path, headers=headers, **kw)

    async def post(self, user: str | None, path: str, **kw: Any) -> httpx.Response:
        headers = {**(await self.headers(user) if user else {}), **kw.pop("headers", {})}
        return await self.client.post(path, headers=headers, **kw)


@pytest.fixture
async def senv(tmp_path: Path) -> AsyncIterator[SessionsEnv]:
    env = await build_env(tmp_path / "cfg", SESSIONS_TOML)
    transport = httpx.ASGITransport(app=env.app, client=("127.0.0.1", 50000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as client:
            yield SessionsEnv(env, client)
    finally:
        await close_env(env)


class Watcher:
    """A client of `principal_id` watching a session (as `session/new` makes one); optionally approves."""

    def __init__(self, principal_id: str, approve: Any = None) -> None:
        self.principal_id: str | None = principal_id
        self.updates: list[dict[str, Any]] = []
        self.approve = approve

    @property
    def closed(self) -> bool:
        return False

    async def send_updates(self, updates: Sequence[dict[str, Any]], frames: Sequence[bytes] | None = None) -> None:
        for params in updates:
            self.updates.append(params)
            if params["type"] == "approval_request" and self.approve is not None:
                self.approve(params)


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


# -- list --------------------------------------------------------------------------------------------------


@pytest.mark.req("R-GW-2")
async def test_list_is_the_callers_own_and_admin_sees_all(senv: SessionsEnv) -> None:
    mine = await senv.open("ann")
    theirs = await senv.open("bob")
    response = await senv.get("ann", "/api/sessions")
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    listed = response.json()["sessions"]
    assert [s["sessionId"] for s in listed] == [mine]
    assert set(listed[0]) == {
        "sessionId",
        "agentAlias",
        "mode",
        "live",
        "killed",
        "createdAt",
        "lastActivity",
        "messageCount",
        "title",
        "model",
        "temperature",
        "parentId",
        "forkedAt",
    }
    assert listed[0]["live"] is True and listed[0]["mode"] == "acp"
    admin = (await senv.get("boss", "/api/sessions")).json()["sessions"]
    assert {s["sessionId"] for s in admin} == {mine, theirs}


@pytest.mark.req("R-GW-2")
async def test_list_hides_killed_sessions_unless_asked(senv: SessionsEnv) -> None:
    killed = await senv.open("ann")
    await senv.sessions.kill(senv.principal("ann"), killed)
    assert (await senv.get("ann", "/api/sessions")).json()["sessions"] == []
    for flag in ("true", "1"):
        listed = (await senv.get("ann", "/api/sessions", params={"includeKilled": flag})).json()["sessions"]
        assert [(s["sessionId"], s["killed"]) for s in listed] == [(killed, True)]
    response = await senv.get("ann", "/api/sessions", params={"includeKilled": "perhaps"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["kind"] == "invalid_params"
    assert [e["field"] for e in error["errors"]] == ["includeKilled"]
    assert "perhaps" not in response.text


@pytest.mark.req("R-GW-6")
async def test_session_routes_need_a_bearer_and_the_grant_of_their_rpc_method(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    for method, path in (
        ("GET", "/api/sessions"),
        ("GET", f"/api/sessions/{sid}/messages"),
        ("POST", f"/api/sessions/{sid}/prompt"),
    ):
        response = await senv.client.request(method, path, json={"prompt": "hi"} if method == "POST" else None)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert error_of(response)["kind"] == "auth_required"
        response = await senv.client.request(
            method, path, json={"prompt": "hi"}, headers={"Authorization": "Bearer zc_" + "0" * 64}
        )
        assert response.status_code == 401, path
    expected = {
        "/api/sessions": "sessions:read",
        f"/api/sessions/{sid}/messages": "sessions:read",
        f"/api/sessions/{sid}/prompt": "sessions:execute",
    }
    for path, grant in expected.items():
        method = "POST" if path.endswith("prompt") else "GET"
        headers = await senv.headers("rita")
        response = await senv.client.request(method, path, json={"prompt": "hi"}, headers=headers)
        assert response.status_code == 403, path
        assert error_of(response) == {"kind": "forbidden", "message": f"Missing grant {grant}", "grant": grant}
    # the grants are read from the RPC registry: change the method's grant and the route follows
    spec = senv.env.registry.get("session/list")
    assert spec is not None and spec.grant == "sessions:read"
    object.__setattr__(spec, "grant", "system:read")
    try:
        assert (await senv.get("rita", "/api/sessions")).status_code == 200
    finally:
        object.__setattr__(spec, "grant", "sessions:read")


# -- messages ----------------------------------------------------------------------------------------------


@pytest.mark.req("R-GW-2")
async def test_messages_page_like_session_messages(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    for text in ("one", "two"):
        assert (await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": text})).status_code == 200
    response = await senv.get("ann", f"/api/sessions/{sid}/messages")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["sessionId"] == sid and body["total"] == 4
    assert [(m["index"], m["role"], m["content"]) for m in body["messages"]] == [
        (0, "user", "one"),
        (1, "assistant", "You said: «one»"),
        (2, "user", "two"),
        (3, "assistant", "You said: «two»"),
    ]
    page = (await senv.get("ann", f"/api/sessions/{sid}/messages", params={"limit": 1, "before": 3})).json()
    assert [m["index"] for m in page["messages"]] == [2] and page["total"] == 4


@pytest.mark.req("R-GW-2")
@pytest.mark.parametrize(
    ("query", "field"), [({"limit": "x"}, "limit"), ({"limit": "10001"}, "limit"), ({"before": "-1"}, "before")]
)
async def test_messages_bad_query_is_400(senv: SessionsEnv, query: dict[str, str], field: str) -> None:
    sid = await senv.open("ann")
    response = await senv.get("ann", f"/api/sessions/{sid}/messages", params=query)
    assert response.status_code == 400
    error = error_of(response)
    assert error["kind"] == "invalid_params"
    assert [e["field"] for e in error["errors"]] == [field]


@pytest.mark.req("R-SES-1")
async def test_messages_of_unknown_or_foreign_sessions(senv: SessionsEnv) -> None:
    sid = await senv.open("bob")
    response = await senv.get("ann", "/api/sessions/s_nope/messages")
    assert response.status_code == 404
    assert error_of(response) == {"kind": "session_not_found", "message": "Session not found"}
    response = await senv.get("ann", f"/api/sessions/{sid}/messages")
    assert response.status_code == 403
    assert error_of(response)["kind"] == "session_not_owned"
    assert (await senv.get("boss", f"/api/sessions/{sid}/messages")).status_code == 200
    response = await senv.get("ann", "/api/sessions/-bad-/messages")
    assert response.status_code == 400
    assert error_of(response)["errors"][0]["field"] == "sessionId"


@pytest.mark.req("R-ACP-9")
async def test_messages_of_a_killed_session_stay_readable(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "keep me"})
    await senv.sessions.kill(senv.principal("ann"), sid)
    body = (await senv.get("ann", f"/api/sessions/{sid}/messages")).json()
    assert body["messages"][0]["content"] == "keep me"
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "again"})
    assert response.status_code == 404
    assert error_of(response)["kind"] == "session_not_found"


# -- prompt ------------------------------------------------------------------------------------------------


@pytest.mark.req("R-GW-2")
async def test_prompt_returns_the_final_result(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "hello there"})
    assert response.status_code == 200, response.text
    assert response.json() == {"sessionId": sid, "stopReason": "end_turn", "content": "You said: «hello there»"}
    assert sid in senv.sessions.live  # it was live before the call: it stays live
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/fail"})
    assert response.status_code == 200
    assert response.json()["stopReason"] == "failed"


@pytest.mark.req("R-ACP-8")
async def test_prompt_rehydrates_a_durable_session_and_releases_it_again(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    await senv.sessions.close(senv.principal("ann"), sid)
    assert sid not in senv.sessions.live
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/context"})
    assert response.status_code == 200, response.text
    assert response.json()["content"] == "user: /context"
    assert sid not in senv.sessions.live  # the call brought it to life only for its turn
    listed = (await senv.get("ann", "/api/sessions")).json()["sessions"]
    assert [(s["sessionId"], s["live"], s["messageCount"]) for s in listed] == [(sid, False, 2)]
    second = (await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/context"})).json()
    assert second["content"].splitlines() == ["user: /context", "assistant: user: /context", "user: /context"]


@pytest.mark.req("R-SES-1")
async def test_prompt_errors_have_their_rpc_kinds(senv: SessionsEnv) -> None:
    foreign = await senv.open("bob")
    response = await senv.post("ann", "/api/sessions/s_unknown/prompt", json={"prompt": "hi"})
    assert response.status_code == 404
    assert error_of(response)["kind"] == "session_not_found"
    response = await senv.post("ann", f"/api/sessions/{foreign}/prompt", json={"prompt": "hi"})
    assert response.status_code == 403
    assert error_of(response)["kind"] == "session_not_owned"
    response = await senv.post("boss", f"/api/sessions/{foreign}/prompt", json={"prompt": "hi"})
    assert response.status_code == 200, response.text  # admin may prompt any session


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize(
    ("content", "kind", "fields"),
    [
        (b"not json", "invalid_request", None),
        (b"[1, 2]", "invalid_request", None),
        (b"{}", "invalid_params", ["prompt"]),
        (b'{"prompt": 5}', "invalid_params", ["prompt"]),
        (b'{"prompt": null}', "invalid_params", ["prompt"]),
    ],
)
async def test_prompt_invalid_body_is_400(
    senv: SessionsEnv, content: bytes, kind: str, fields: list[str] | None
) -> None:
    sid = await senv.open("ann")
    response = await senv.post(
        "ann", f"/api/sessions/{sid}/prompt", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    error = error_of(response)
    assert error["kind"] == kind
    if fields is not None:
        assert [e["field"] for e in error["errors"]] == fields


@pytest.mark.req("R-GW-2")
async def test_the_path_names_the_session_not_the_body(senv: SessionsEnv) -> None:
    mine = await senv.open("ann")
    foreign = await senv.open("bob")
    response = await senv.post(
        "ann", f"/api/sessions/{mine}/prompt", json={"prompt": "x", "sessionId": foreign, "session_id": foreign}
    )
    assert response.status_code == 200
    assert response.json()["sessionId"] == mine


@pytest.mark.req("R-SES-2")
async def test_prompt_on_a_busy_session_is_409(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    slow = asyncio.create_task(senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/sleep 0.6"}))
    await until(lambda: senv.sessions.live[sid].busy)
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "hi"})
    assert response.status_code == 409
    assert error_of(response) == {"kind": "session_busy", "message": "A turn is already running on this session"}
    assert (await slow).json()["stopReason"] == "end_turn"


@pytest.mark.req("R-SES-2")
async def test_two_gateway_calls_cannot_both_bring_a_stored_session_to_life(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    await senv.sessions.close(senv.principal("ann"), sid)
    first, second = await asyncio.gather(
        senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/sleep 0.3"}),
        senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/sleep 0.3"}),
    )
    assert sorted([first.status_code, second.status_code]) == [200, 409]


@pytest.mark.req("R-GW-2")
async def test_a_call_cancelled_mid_turn_releases_its_session_when_the_turn_ends(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    await senv.sessions.close(senv.principal("ann"), sid)
    call = asyncio.create_task(senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/sleep 0.3"}))
    await until(lambda: sid in senv.sessions.live and senv.sessions.live[sid].busy)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    assert sid in senv.sessions.live  # the turn goes on without its HTTP caller
    await until(lambda: sid not in senv.sessions.live)  # released when the turn ends
    rows = (await senv.get("ann", f"/api/sessions/{sid}/messages")).json()["messages"]
    assert [r["role"] for r in rows] == ["user", "assistant"]


# -- no interactive client -----------------------------------------------------------------------------------


@pytest.mark.req("R-STREAM-3")
async def test_approval_is_rejected_at_once_without_a_watching_client(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    started = time.monotonic()
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/bash echo ran"})
    assert time.monotonic() - started < 5  # approval_timeout_secs is 30
    body = response.json()
    assert body["stopReason"] == "end_turn"
    assert "rejected" in body["content"] and "\nran" not in body["content"]
    rows = (await senv.get("ann", f"/api/sessions/{sid}/messages")).json()["messages"]
    assert [r["role"] for r in rows] == ["user", "tool_call", "tool_result", "assistant"]
    assert "rejected" in rows[2]["content"]


@pytest.mark.req("R-STREAM-3")
async def test_a_watching_client_of_the_same_principal_can_approve(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    principal = senv.principal("ann")

    def allow(params: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_later(
            0.05, senv.sessions.turns.approve, principal, sid, params["request_id"], "allow_once"
        )

    watcher = Watcher(principal.id, approve=allow)
    senv.sessions.live[sid].watch(watcher)
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/bash echo approved-run"})
    assert response.status_code == 200
    assert response.json()["content"].startswith("Command output:\napproved-run\n")
    types = [u["type"] for u in watcher.updates]
    assert "approval_request" in types and types[-1] == "turn_complete"


@pytest.mark.req("R-STREAM-3")
async def test_auto_approved_tools_run_over_rest(senv: SessionsEnv) -> None:
    sid = await senv.open("ann", agent_alias="trusted")
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/bash echo trusted-run"})
    assert response.json()["content"].startswith("Command output:\ntrusted-run\n")


@pytest.mark.req("R-BIDI-5")
async def test_elicitation_says_no_interactive_client_is_attached(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    response = await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/ask Your name?"})
    assert response.status_code == 200
    assert "no interactive client is attached" in response.json()["content"]


# -- OpenAPI -----------------------------------------------------------------------------------------------


@pytest.mark.req("R-GW-2")
async def test_openapi_describes_the_session_routes_and_the_webhook(senv: SessionsEnv) -> None:
    spec = (await senv.client.get("/openapi.json")).json()
    routed = {getattr(r, "path", None) for r in senv.env.app.routes}
    for path, method in (
        ("/api/sessions", "get"),
        ("/api/sessions/{id}/messages", "get"),
        ("/api/sessions/{id}/usage", "get"),
        ("/api/sessions/{id}/prompt", "post"),
        ("/webhook/{agent}", "post"),
    ):
        assert path in routed
        operation = spec["paths"][path][method]
        assert operation["security"] == [{"bearer": []}]
        assert "401" in operation["responses"] and "200" in operation["responses"]
    assert spec["paths"]["/webhook/{agent}"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "required"
    ] == ["message"]


@pytest.mark.req("R-BRANCH-5")
async def test_fork_and_rollback_routes_are_their_rpc_twins(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    for text in ("one", "two"):
        assert (await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": text})).status_code == 200
    forked = await senv.post("ann", f"/api/sessions/{sid}/fork", json={"atIndex": 2})
    assert forked.status_code == 200, forked.text
    child = forked.json()
    assert (child["parentId"], child["forkedAt"], child["messageCount"]) == (sid, 2, 2)
    bad = await senv.post("ann", f"/api/sessions/{sid}/fork", json={"atIndex": 1})
    assert bad.status_code == 400
    rolled = await senv.post("ann", f"/api/sessions/{sid}/rollback", json={"turns": 1})
    assert rolled.status_code == 200 and rolled.json()["fromIndex"] == 2, rolled.text
    seen = (await senv.post("ann", f"/api/sessions/{sid}/prompt", json={"prompt": "/context"})).json()
    assert seen["content"].splitlines() == ["user: one", "assistant: You said: «one»", "user: /context"]
    assert (await senv.post("bob", f"/api/sessions/{sid}/rollback", json={"turns": 1})).status_code in (403, 404)


@pytest.mark.req("R-BRANCH-3")
@pytest.mark.req("R-BRANCH-5")
async def test_the_steer_route_is_its_rpc_twin(senv: SessionsEnv) -> None:
    sid = await senv.open("ann")
    idle = await senv.post("ann", f"/api/sessions/{sid}/steer", json={"prompt": "left"})
    assert idle.status_code == 400, idle.text  # no turn runs: the client prompts instead
    assert "No turn is running" in idle.text, idle.text
    assert (await senv.post("bob", f"/api/sessions/{sid}/steer", json={"prompt": "x"})).status_code in (403, 404)
    assert (await senv.post("ann", f"/api/sessions/{sid}/steer", json={})).status_code == 400
