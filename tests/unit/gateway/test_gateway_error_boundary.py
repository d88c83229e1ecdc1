"""The REST routes' one error boundary (issue 14): a domain failure raised by an authenticated route is answered
by the app's `RpcError` handler as its RPC twin would (same kind and data, with its HTTP status), audited once;
no route catches exceptions itself."""

from __future__ import annotations

import ast
import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_env import Env

pytestmark = pytest.mark.req("R-GW-6")

REST = Path(__file__).resolve().parents[3] / "gateway" / "rest"


def test_no_route_module_catches_a_domain_failure_itself() -> None:
    modules = sorted(REST.glob("*.py"))
    assert {"pairing.py", "sessions.py", "webhook.py"} <= {path.name for path in modules}
    for path in modules:
        tree = ast.parse(path.read_text())
        broad = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.ExceptHandler)
            and (node.type is None or (isinstance(node.type, ast.Name) and node.type.id == "Exception"))
        ]
        assert broad == [], (path.name, broad)


@pytest.mark.req("R-ARCH-3")
async def test_a_route_is_admitted_by_the_grant_its_rpc_twin_declares_and_by_nothing_else(
    env: Env, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, token = await env.token("alice")  # system:read and config:read
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/api/config", headers=headers)).status_code == 200
    # Declare another grant for `config/get` in the registry: the REST twin follows at once.
    spec = env.registry.get("config/get")
    assert spec is not None
    monkeypatch.setitem(env.registry._methods, "config/get", dataclasses.replace(spec, grant="pairing:read"))
    denied = await client.get("/api/config", headers=headers)
    assert denied.status_code == 403
    assert denied.json()["error"] == {
        "kind": "forbidden",
        "message": "Missing grant pairing:read",
        "grant": "pairing:read",
    }


def _denied(env: Env) -> int:
    env.services.audit.flush()  # lines are written by the audit log's thread
    log = env.services.paths.audit_log
    return sum('"denied"' in line for line in log.read_text().splitlines()) if log.exists() else 0


async def test_an_unexpected_failure_after_auth_is_500_with_an_error_id_only(
    env: Env, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(prop: Any = None) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(env.services.config_store, "get", boom)
    _, token = await env.token("alice")
    response = await client.get("/api/config", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 500
    error = response.json()["error"]
    assert error.pop("error_id")
    assert error == {"kind": "internal_error", "message": "Internal error"}
    assert "secret" not in response.text


async def test_a_storage_failure_of_a_domain_call_is_503(
    env: Env, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(prop: Any = None) -> Any:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = 13
        raise exc

    monkeypatch.setattr(env.services.config_store, "get", full)
    _, token = await env.token("alice")
    response = await client.get("/api/config", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["kind"], error["reason"]) == ("storage_unavailable", "disk_full") and error["error_id"]


async def test_a_forbidden_domain_failure_is_audited_once_as_the_caller(env: Env, client: httpx.AsyncClient) -> None:
    _, token = await env.token("tina")
    before = _denied(env)
    response = await client.put(
        "/api/config/gateway.port", headers={"Authorization": f"Bearer {token}"}, json={"value": 1}
    )
    assert response.status_code == 403
    assert response.json() == {
        "error": {"kind": "forbidden", "message": "config path not writable", "prop": "gateway.port"}
    }
    assert _denied(env) == before + 1
