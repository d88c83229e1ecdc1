"""The gateway's HTTP surface over httpx's ASGI transport (R-GW-2, R-GW-6)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest
from gateway_env import Env
from starlette.requests import Request
from starlette.routing import Route

from gateway.app import allowed_hosts
from gateway.middleware import host_name, split_host
from gateway.ws import origin_allowed


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.req("R-GW-2")
async def test_health_needs_no_token_and_hides_the_server_version(client: httpx.AsyncClient) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["server"] == "zeroclaw"
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.req("R-GW-2")
async def test_openapi_lists_every_route_without_a_token(client: httpx.AsyncClient, env: Env) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["openapi"].startswith("3.")
    # The panel (`/` and its static files) is a page, not part of the API the spec describes.
    routed = {getattr(r, "path", None) for r in env.app.routes} - {"/", "/static"}
    assert set(spec["paths"]) == routed
    assert spec["paths"]["/api/status"]["get"]["security"] == [{"bearer": []}]
    assert spec["paths"]["/health"]["get"]["security"] == []


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize("host", ["evil.example", "127.0.0.2:42617", "attacker.localhost"])
async def test_host_not_allowed_is_400(client: httpx.AsyncClient, host: str) -> None:
    response = await client.get("/health", headers={"Host": host})
    assert response.status_code == 400
    assert response.json() == {"error": {"kind": "invalid_request", "message": "Host not allowed"}}


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize("host", ["127.0.0.1:42617", "localhost", "LOCALHOST.:1", "[::1]:42617"])
async def test_loopback_hosts_are_allowed(client: httpx.AsyncClient, host: str) -> None:
    response = await client.get("/health", headers={"Host": host})
    assert response.status_code == 200


@pytest.mark.req("R-GW-6")
async def test_configured_allowed_hosts_apply_at_once(client: httpx.AsyncClient, env: Env) -> None:
    assert (await client.get("/health", headers={"Host": "zc.example:8443"})).status_code == 400
    _, token = await env.token()
    response = await client.put(
        "/api/config/gateway.allowed_hosts", json={"value": ["zc.example"]}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    assert (await client.get("/health", headers={"Host": "zc.example:8443"})).status_code == 200


@pytest.mark.req("R-GW-6")
def test_allowed_hosts_include_the_bind_host_but_not_a_wildcard() -> None:
    assert allowed_hosts("10.0.0.5", []) == {"127.0.0.1", "localhost", "::1", "10.0.0.5"}
    assert allowed_hosts("0.0.0.0", ["Box.Lan."]) == {"127.0.0.1", "localhost", "::1", "box.lan"}
    assert allowed_hosts("::", ["[fe80::1]"]) == {"127.0.0.1", "localhost", "::1", "fe80::1"}


def test_host_header_parsing() -> None:
    assert split_host("[::1]:80") == ("::1", 80)
    assert split_host("Example.COM.") == ("example.com", None)
    assert split_host("a:b:c") == ("a:b:c", None)
    assert host_name("[::1") == ""


@pytest.mark.req("R-GW-6")
async def test_body_over_64_kib_by_content_length_is_413(client: httpx.AsyncClient) -> None:
    response = await client.post("/pair", content=b"{" + b" " * (64 * 1024) + b"}", headers={"X-Pairing-Code": "1"})
    assert response.status_code == 413
    assert response.json()["error"] == {
        "kind": "limit_exceeded",
        "message": "Request body too large",
        "name": "body",
        "limit": 65536,
    }


@pytest.mark.req("R-GW-6")
async def test_streamed_body_over_64_kib_is_413(client: httpx.AsyncClient, env: Env) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" " * 4096

    _, token = await env.token()
    response = await client.put("/api/config/limits.max_sessions", content=chunks(), headers=bearer(token))
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert response.json()["error"]["kind"] == "limit_exceeded"


async def test_malformed_content_length_is_400(env: Env) -> None:
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/pair",
        "headers": [(b"host", b"127.0.0.1"), (b"content-length", b"-1")],
        "query_string": b"",
    }
    await env.app(scope, receive, send)
    assert sent[0]["status"] == 400


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"}, {"Authorization": "Bearer zc_" + "0" * 64}],
)
async def test_missing_or_bad_bearer_is_401_json(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    response = await client.get("/api/status", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    error = response.json()["error"]
    assert error["kind"] == "auth_required"
    assert isinstance(error["message"], str)
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.req("R-GW-6")
async def test_missing_grant_is_403_json_naming_the_registry_grant(client: httpx.AsyncClient, env: Env) -> None:
    _, token = await env.token("eve")
    response = await client.get("/api/status", headers=bearer(token))
    assert response.status_code == 403
    assert response.json() == {
        "error": {"kind": "forbidden", "message": "Missing grant system:read", "grant": "system:read"}
    }
    spec = env.registry.get("status")
    assert spec is not None and spec.grant == "system:read"


@pytest.mark.req("R-GW-2")
async def test_status_with_a_token(client: httpx.AsyncClient, env: Env) -> None:
    _, token = await env.token("alice")
    response = await client.get("/api/status", headers=bearer(token))
    assert response.status_code == 200
    body = response.json()
    assert body["protocolVersion"] == 1
    assert body["connections"] == 0
    assert body["dataDir"] == str(env.services.paths.data_dir)


@pytest.mark.req("R-AUTH-4")
async def test_revoked_token_is_refused_at_the_next_request(client: httpx.AsyncClient, env: Env) -> None:
    token_id, token = await env.token("alice")
    assert (await client.get("/api/status", headers=bearer(token))).status_code == 200
    await env.services.pairing.revoke(token_id)
    assert (await client.get("/api/status", headers=bearer(token))).status_code == 401


@pytest.mark.req("R-GW-2")
async def test_get_config_is_masked(client: httpx.AsyncClient, env: Env) -> None:
    _, token = await env.token("alice")
    response = await client.get("/api/config", headers=bearer(token))
    assert response.status_code == 200
    assert response.json()["limits"]["max_connections"] == 1024
    one = await client.get("/api/config", params={"prop": "limits.max_frame_bytes"}, headers=bearer(token))
    assert one.json() == {"prop": "limits.max_frame_bytes", "value": 8388608}
    bad = await client.get("/api/config", params={"prop": "no.such"}, headers=bearer(token))
    assert bad.status_code == 400
    assert bad.json()["error"]["kind"] == "invalid_params"


@pytest.mark.req("R-GW-6")
async def test_put_config_through_the_store(client: httpx.AsyncClient, env: Env) -> None:
    store = env.services.config_store
    _, tina = await env.token("tina")
    _, alice = await env.token("alice")
    url = "/api/config/limits.max_sessions"
    ok = await client.put(url, json={"value": 3}, headers=bearer(tina))
    assert ok.status_code == 200, ok.text
    assert ok.json() == {"prop": "limits.max_sessions", "set": True}
    assert store.current.limits.max_sessions == 3
    assert "max_sessions = 3" in (env.tmp / "config.toml").read_text()

    no_grant = await client.put(url, json={"value": 4}, headers=bearer(alice))
    assert no_grant.status_code == 403
    assert no_grant.json()["error"]["grant"] == "config:update"

    no_path = await client.put("/api/config/gateway.port", json={"value": 1}, headers=bearer(tina))
    assert no_path.status_code == 403
    assert no_path.json()["error"] == {
        "kind": "forbidden",
        "message": "config path not writable",
        "prop": "gateway.port",
    }

    bad_type = await client.put(url, json={"value": "three"}, headers=bearer(tina))
    assert bad_type.status_code == 400
    error = bad_type.json()["error"]
    assert error["kind"] == "invalid_params"
    assert "three" not in bad_type.text
    assert error["errors"][0]["field"] == "limits.max_sessions"

    no_value = await client.put(url, json={"v": 1}, headers=bearer(tina))
    assert no_value.status_code == 400
    not_json = await client.put(url, content=b"{oops", headers=bearer(tina))
    assert not_json.status_code == 400
    assert not_json.json()["error"]["kind"] == "invalid_request"
    assert store.current.limits.max_sessions == 3


async def test_unknown_route_and_method_are_json(client: httpx.AsyncClient) -> None:
    missing = await client.get("/nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["kind"] == "not_found"
    wrong = await client.post("/health")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["kind"] == "method_not_allowed"


@pytest.mark.req("R-WIRE-4")
async def test_unexpected_failure_is_500_with_error_id_and_no_traceback(
    client: httpx.AsyncClient, env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    async def boom(request: Request) -> None:
        raise RuntimeError("secret detail /etc/shadow")

    env.app.router.routes.append(Route("/api/boom", boom))
    with caplog.at_level(logging.ERROR, logger="zeroclaw.gateway"):
        response = await client.get("/api/boom")
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["kind"] == "internal_error"
    assert len(error["error_id"]) == 16
    assert "secret" not in response.text and "Traceback" not in response.text
    assert response.headers["server"] == "zeroclaw"
    assert any(error["error_id"] in r.getMessage() and r.exc_info for r in caplog.records)


@pytest.mark.req("R-GW-6")
@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        (None, "127.0.0.1:42617", "ws", True),
        ("http://127.0.0.1:42617", "127.0.0.1:42617", "ws", True),
        ("https://LOCALHOST", "localhost:443", "wss", True),
        ("http://localhost", "localhost", "ws", True),
        ("http://127.0.0.1:9999", "127.0.0.1:42617", "ws", False),
        ("http://evil.example:42617", "127.0.0.1:42617", "ws", False),
        ("null", "127.0.0.1:42617", "ws", False),
        ("file://", "127.0.0.1", "ws", False),
        ("http://127.0.0.1:99999999", "127.0.0.1", "ws", False),
        ("http://127.0.0.1", None, "ws", False),
    ],
)
def test_origin_rule(origin: str | None, host: str | None, scheme: str, allowed: bool) -> None:
    assert origin_allowed(origin, host, scheme) is allowed


@pytest.mark.req("R-GW-6")
async def test_websocket_upgrade_for_a_foreign_host_is_refused(env: Env) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "websocket",
        "path": "/rpc",
        "headers": [(b"host", b"rebind.example:42617")],
        "query_string": b"",
        "extensions": {"websocket.http.response": {}},
        "client": ("127.0.0.1", 1),
    }
    await env.app(scope, receive, send)
    assert sent[0]["type"] == "websocket.http.response.start" and sent[0]["status"] == 400
    assert (b"server", b"zeroclaw") in sent[0]["headers"]
    assert not env.server.connections
    sent.clear()
    del scope["extensions"]
    await env.app(scope, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]
