"""One-time pairing codes and `POST /pair` (R-AUTH-4, R-GW-6)."""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest
from gateway_env import Env, EnvFactory

from app.auth.pairing_codes import PairingCodes, PairingLocked, PairingRejected

pytestmark = pytest.mark.req("R-AUTH-4")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_is_six_digits_bound_to_its_user_and_works_once() -> None:
    codes = PairingCodes()
    code = codes.issue("alice", "laptop")
    assert len(code) == 6 and code.isdigit()
    binding = codes.redeem(code)
    assert (binding.user, binding.label) == ("alice", "laptop")
    with pytest.raises(PairingRejected):
        codes.redeem(code)


def test_a_code_expires() -> None:
    clock = Clock()
    codes = PairingCodes(ttl_secs=300, clock=clock)
    code = codes.issue("alice")
    clock.now += 300
    with pytest.raises(PairingRejected):
        codes.redeem(code)


def test_a_code_for_another_user_is_a_wrong_code() -> None:
    codes = PairingCodes()
    code = codes.issue("alice")
    with pytest.raises(PairingRejected):
        codes.redeem(code, user="bob")
    assert codes.redeem(code, user="alice").user == "alice"


def test_five_failures_lock_out_for_five_minutes_even_the_right_code() -> None:
    clock = Clock()
    codes = PairingCodes(clock=clock)
    code = codes.issue("alice")
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(5):
        with pytest.raises(PairingRejected):
            codes.redeem(wrong)
    with pytest.raises(PairingLocked) as locked:
        codes.redeem(code)
    assert locked.value.retry_after == 300
    clock.now += 299
    with pytest.raises(PairingLocked):
        codes.redeem(code)
    clock.now += 1
    code = codes.issue("alice")  # the first one expired meanwhile
    assert codes.redeem(code).user == "alice"


def test_a_success_resets_the_failure_count() -> None:
    codes = PairingCodes()
    for _ in range(4):
        with pytest.raises(PairingRejected):
            codes.redeem("abcdef")
    codes.redeem(codes.issue("alice"))
    for _ in range(4):
        with pytest.raises(PairingRejected):
            codes.redeem("12345")
    codes.redeem(codes.issue("alice"))  # not locked: the count restarted


def test_outstanding_codes_are_capped() -> None:
    codes = PairingCodes(max_outstanding=2)
    first = codes.issue("a")
    codes.issue("b")
    codes.issue("c")
    assert codes.outstanding == 2
    with pytest.raises(PairingRejected):
        codes.redeem(first)


async def test_pair_trades_a_code_for_a_working_token(client: httpx.AsyncClient, env: Env) -> None:
    code = env.app.state.pairing_codes.issue("alice")
    response = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"label": "phone"})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"tokenId", "token", "user", "createdAt"}
    assert body["user"] == "alice" and body["token"].startswith("zc_")
    assert response.headers["cache-control"] == "no-store"
    status = await client.get("/api/status", headers={"Authorization": f"Bearer {body['token']}"})
    assert status.status_code == 200
    listed = await env.services.pairing.store.list_active("alice")
    assert [r.label for r in listed] == ["phone"]
    again = await client.post("/pair", headers={"X-Pairing-Code": code})
    assert again.status_code == 403


async def test_pair_with_an_empty_body(client: httpx.AsyncClient, env: Env) -> None:
    code = env.codes.issue("boss", "cli")
    response = await client.post("/pair", headers={"X-Pairing-Code": code})
    assert response.status_code == 201
    assert response.json()["user"] == "boss"


@pytest.mark.req("R-GW-6")
async def test_wrong_code_403_then_lockout_429(make_env: EnvFactory) -> None:
    clock = Clock()
    env = await make_env(codes=PairingCodes(clock=clock))
    transport = httpx.ASGITransport(app=env.app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        code = env.codes.issue("alice")
        wrong = "000000" if code != "000000" else "111111"
        for _ in range(5):
            response = await client.post("/pair", headers={"X-Pairing-Code": wrong})
            assert response.status_code == 403
            assert response.json() == {"error": {"kind": "forbidden", "message": "Wrong or expired pairing code"}}
        locked = await client.post("/pair", headers={"X-Pairing-Code": code})
        assert locked.status_code == 429
        assert locked.headers["retry-after"] == "300"
        error = locked.json()["error"]
        assert (error["kind"], error["name"], error["retryAfter"]) == ("limit_exceeded", "pairing_attempts", 300)
        clock.now += 300
        code = env.codes.issue("alice")
        assert (await client.post("/pair", headers={"X-Pairing-Code": code})).status_code == 201
    env.services.audit.flush()  # lines are written by the audit log's thread
    entries = [json.loads(line) for line in env.services.paths.audit_log.read_text().splitlines()]
    denied = [e for e in entries if e["event"] == "denied"]
    assert len(denied) == 6 and all(e["peer"] == "http:127.0.0.1:50000" for e in denied)


async def test_pair_input_errors(client: httpx.AsyncClient, env: Env) -> None:
    missing = await client.post("/pair")
    assert missing.status_code == 400
    assert missing.json()["error"]["kind"] == "invalid_params"
    code = env.codes.issue("alice")
    bad_label = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"label": 5})
    assert bad_label.status_code == 400
    not_object = await client.post("/pair", headers={"X-Pairing-Code": code}, json=[1])
    assert not_object.status_code == 400
    wrong_user = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"user": "boss"})
    assert wrong_user.status_code == 403
    right_user = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"user": "alice"})
    assert right_user.status_code == 201


async def test_a_code_for_a_user_removed_since_is_refused(client: httpx.AsyncClient, env: Env) -> None:
    code = env.codes.issue("ghost")
    response = await client.post("/pair", headers={"X-Pairing-Code": code})
    assert response.status_code == 403
    assert await env.services.pairing.store.list_active("ghost") == []


@pytest.mark.req("R-STORE-3")
async def test_pair_answers_503_when_the_token_cannot_be_stored(
    client: httpx.AsyncClient, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a full disk while storing the new token was a bare 500; it is storage_unavailable, as on every
    other route, and no token is handed out."""

    async def full(*_args: object) -> object:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = 13
        raise exc

    monkeypatch.setattr(env.services.pairing, "create", full)
    code = env.app.state.pairing_codes.issue("alice")
    response = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"label": "phone"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["kind"], error["reason"]) == ("storage_unavailable", "disk_full") and error["error_id"]
    assert "token" not in response.text
