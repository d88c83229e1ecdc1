"""The dispatcher pipeline and the connection's tables over the in-memory transport."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest
from waiting import until

from app.audit import AuditLog
from app.config.schema import Limits
from app.services import DaemonStatus, GatewayInfo
from rpc.core.boundary import ErrorBoundary
from rpc.core.client_requests import PeerError, PendingLimitReached
from rpc.core.context import CallContext
from rpc.core.dispatcher import Dispatcher
from rpc.core.envelope import encode_notifications
from rpc.core.errors import Forbidden
from rpc.core.registry import NoParams, Params
from rpc.methods import build_registry
from rpc.transports.base import ConnectionClosed, Peer
from rpc.transports.memory import MemoryTransport


@dataclass(frozen=True)
class FakePrincipal:
    id: str
    admin: bool
    grants: frozenset[str] = frozenset()

    def has_grant(self, grant: str) -> bool:
        return self.admin or grant in self.grants


@dataclass
class FakeAuth:
    principal: FakePrincipal | None = field(default_factory=lambda: FakePrincipal("owner", True))
    generation: int = 0

    def local(self, uid: int) -> tuple[Any, Any] | None:
        return None if self.principal is None else (("uid", uid), self.principal)

    async def token(self, token: str) -> tuple[Any, Any] | None:
        return (("token", token), self.principal) if token == "good" and self.principal else None

    def refresh(self, credential: Any) -> Any:
        return self.principal


@dataclass
class FakeSessions:
    live: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class FakeServices:
    auth: FakeAuth = field(default_factory=FakeAuth)
    audit: AuditLog = field(default_factory=lambda: AuditLog(None))
    version: str = "9.9.9"
    sessions: FakeSessions = field(default_factory=FakeSessions)
    gateway_url: str | None = None
    clock_ns: int = 0  # a frozen clock: tests move it by hand
    started_ns: int = 0

    def clock(self) -> int:
        return self.clock_ns

    def uptime_ms(self, now_ns: int | None = None) -> int:
        return ((self.clock_ns if now_ns is None else now_ns) - self.started_ns) // 1_000_000

    def describe(self, now_ns: int | None = None) -> DaemonStatus:
        live = self.sessions.live
        return DaemonStatus(
            server_version=self.version,
            pid=1,
            endpoint="/tmp/fake.sock",
            gateway=GatewayInfo(self.gateway_url) if self.gateway_url else None,
            data_dir="/tmp/data",
            config_file="/tmp/config.toml",
            uptime_secs=self.uptime_ms(now_ns) / 1000,
            active_sessions=len(live),
            session_ids=sorted(live),
        )


class EchoParams(Params):
    session_id: str
    count: int = 1


class SleepParams(Params):
    secs: float


def make_server(limits: Limits | None = None) -> tuple[Dispatcher, FakeServices]:
    registry = build_registry()
    registry.method("test/echo", params=EchoParams, grant="system:read")(lambda call, p: {"sessionId": p.session_id})

    async def sleep(call: CallContext, params: SleepParams) -> str:
        await asyncio.sleep(params.secs)
        return "slept"

    registry.method("test/sleep", params=SleepParams, grant="system:read")(sleep)

    def sometimes(call: CallContext, params: SleepParams) -> Any:
        # A plain handler that has to wait only sometimes (as `session/list` when its list is not kept).
        if params.secs == 0:
            return "at once"
        if params.secs < 0:
            return boom_later()
        return sleep(call, params)

    async def boom_later() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("secret detail /etc/passwd")

    registry.method("test/sometimes", params=SleepParams, grant="system:read")(sometimes)

    def boom(call: CallContext, params: NoParams) -> None:
        raise RuntimeError("secret detail /etc/passwd")

    registry.method("test/boom", params=NoParams, grant="system:read")(boom)
    registry.method("test/local", params=NoParams, grant="system:read", local_only=True)(lambda c, p: "ok")
    services = FakeServices()
    lim = limits or Limits()
    return Dispatcher(registry, services, services.audit, limits=lambda: lim), services


def req(method: str, params: Any = None, rid: Any = 1) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        frame["params"] = params
    return frame


async def initialized(server: Dispatcher, peer: Peer | None = None) -> MemoryTransport:
    transport = MemoryTransport(server, peer)
    token = {"authToken": "good"} if peer is not None and peer.remote else {}
    transport.feed(req("initialize", {"protocolVersion": 1, **token}, "init"))
    reply = await transport.next_message()
    assert "result" in reply, reply
    return transport


@pytest.mark.req("R-INIT-1")
async def test_methods_before_initialize_are_refused_and_notifications_ignored() -> None:
    server, _ = make_server()
    t = MemoryTransport(server)
    t.feed({"jsonrpc": "2.0", "method": "status"})
    t.feed(req("status"))
    reply = await t.next_message()
    assert reply["error"]["code"] == -32010
    assert reply["error"]["message"] == "First call must be 'initialize'"
    assert reply["id"] == 1 and t.sent == []


@pytest.mark.req("R-INIT-3")
async def test_version_mismatch_reports_supported_and_requested() -> None:
    server, _ = make_server()
    t = MemoryTransport(server)
    t.feed(req("initialize", {"protocolVersion": 2}))
    reply = await t.next_message()
    assert reply["error"]["code"] == -32011
    assert reply["error"]["data"] == {"kind": "version_mismatch", "supported": [1], "requested": 2}


@pytest.mark.req("R-INIT-4")
@pytest.mark.req("R-WIRE-8")
async def test_initialize_result_and_snake_case_params() -> None:
    server, _ = make_server()
    t = MemoryTransport(server)
    t.feed(req("initialize", {"protocol_version": 1, "client_info": {"name": "x", "version": "1"}}))
    result = (await t.next_message())["result"]
    assert result["protocolVersion"] == 1 and result["serverVersion"] == "9.9.9"
    assert result["principal"] == {"id": "owner", "admin": True}
    assert "status" in result["methods"] and "initialize" in result["methods"]
    assert isinstance(result["serverPid"], int)


@pytest.mark.req("R-INIT-2")
async def test_protocol_version_must_be_an_integer() -> None:
    server, _ = make_server()
    t = MemoryTransport(server)
    t.feed(req("initialize", {"protocolVersion": "1"}))
    reply = await t.next_message()
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["errors"][0]["field"] == "protocolVersion"


@pytest.mark.req("R-WIRE-4")
async def test_unknown_method_invalid_params_and_internal_error() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed({"jsonrpc": "2.0", "method": "nope"})  # unknown notification: ignored
    t.feed(req("nope", rid=2))
    assert (await t.next_message())["error"]["code"] == -32601
    t.feed(req("test/echo", {"sessionId": 5, "count": "secret-value"}, rid=3))
    error = (await t.next_message())["error"]
    assert error["code"] == -32602
    # Validation stops at the first failing field (msgspec's way; docs/protocol.md).
    (failed,) = error["data"]["errors"]
    assert failed["field"] in {"sessionId", "count"} and failed["type"] in {"string_type", "int_type"}
    assert "secret-value" not in str(error)
    t.feed(req("test/echo", {"sessionId": "s1", "count": "secret-value"}, rid=5))
    error = (await t.next_message())["error"]
    assert error["data"]["errors"] == [{"field": "count", "message": "Expected `int`, got `str`", "type": "int_type"}]
    assert "secret-value" not in str(error)
    t.feed(req("test/boom", rid=4))
    error = (await t.next_message())["error"]
    assert error["code"] == -32603 and len(error["data"]["error_id"]) == 16
    assert "passwd" not in str(error) and "Traceback" not in str(error)


@pytest.mark.req("R-WIRE-8")
async def test_camel_and_snake_case_params_both_accepted() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("test/echo", {"sessionId": "a"}, rid=1))
    t.feed(req("test/echo", {"session_id": "b"}, rid=2))
    assert [m["result"]["sessionId"] for m in t.messages()] == ["a", "b"]


@pytest.mark.req("R-WIRE-3")
async def test_positional_params_are_invalid_params_but_empty_array_is_none() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("status", [], rid=1))
    t.feed(req("test/echo", ["a"], rid=2))
    first, second = t.messages()
    assert "result" in first and second["error"]["code"] == -32602


@pytest.mark.req("R-WIRE-3")
@pytest.mark.req("R-WIRE-4")
async def test_every_envelope_rule_holds_for_a_method_already_admitted() -> None:
    # Once `status` and `test/echo` were admitted, their frames take the connection's hot path: it must answer
    # exactly as the general path does.
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("status", rid=1))
    t.feed(req("test/echo", {"sessionId": "a"}, rid=2))
    assert [m["id"] for m in t.messages()] == [1, 2]
    t.sent.clear()
    cases: list[tuple[bytes | dict[str, Any], Any, int | None]] = [
        ({"jsonrpc": "1.0", "method": "status", "id": 3}, 3, -32600),
        ({"jsonrpc": "2.0", "method": "status", "params": None, "id": 4}, 4, -32600),
        ({"jsonrpc": "2.0", "method": "status", "params": True, "id": 5}, 5, -32600),
        ({"jsonrpc": "2.0", "method": "status", "id": True}, None, -32600),
        ({"jsonrpc": "2.0", "method": "status", "id": [6]}, None, -32600),
        ({"jsonrpc": "2.0", "method": "status", "id": 7, "result": 1}, None, -32600),
        ({"jsonrpc": "2.0", "method": "status", "id": 8, "error": {"code": 1, "message": "m"}}, None, -32600),
        ({"jsonrpc": "2.0", "method": "test/echo", "params": {"sessionId": 5}, "id": 9}, 9, -32602),
        ({"jsonrpc": "2.0", "method": "test/echo", "params": ["a"], "id": 10}, 10, -32602),
        ({"jsonrpc": "2.0", "method": "status", "params": [], "id": 11}, 11, None),
        ({"jsonrpc": "2.0", "method": "status", "id": None}, None, None),
        ({"jsonrpc": "2.0", "method": "status", "id": "s"}, "s", None),
        (b'{"jsonrpc":"2.0","method":"status","id":', None, -32700),
    ]
    for frame, rid, code in cases:
        t.feed(frame)
        (reply,) = t.messages()
        t.sent.clear()
        assert reply["id"] == rid, (frame, reply)
        assert (reply["error"]["code"] if "error" in reply else None) == code, (frame, reply)
    t.feed({"jsonrpc": "2.0", "method": "status"})  # a notification: never answered
    t.feed({"jsonrpc": "2.0", "method": "status", "params": {}})
    assert t.sent == []


@pytest.mark.req("R-AUTH-5")
async def test_a_policy_change_rechecks_a_method_already_admitted() -> None:
    server, services = make_server()
    t = await initialized(server)
    t.feed(req("status", rid=1))
    assert "result" in (await t.next_message())
    services.auth.principal = FakePrincipal("user:bob", False, frozenset({"sessions:read"}))
    services.auth.generation += 1
    t.feed(req("status", rid=2))
    assert (await t.next_message())["error"]["code"] == -32012


@pytest.mark.req("R-AUTH-5")
async def test_connections_acting_as_the_same_principal_share_one_admission_table() -> None:
    server, services = make_server()
    first, second = await initialized(server), await initialized(server)
    remote = await initialized(server, Peer("ws", remote=True))
    assert first.connection is not None and second.connection is not None and remote.connection is not None
    first.feed(req("status", rid=1))
    assert "result" in (await first.next_message())
    assert second.connection.authority.admitted is first.connection.authority.admitted  # admitted once, for both
    assert "status" in second.connection.authority.admitted
    assert (
        remote.connection.authority.admitted is not first.connection.authority.admitted
    )  # local-only methods differ remotely
    remote.feed(req("test/local", rid=2))
    assert (await remote.next_message())["error"]["data"]["kind"] == "local_only"
    assert "test/local" not in first.connection.authority.admitted

    # A failed re-initialize drops that connection's principal, and never the table the others use.
    second.feed(req("initialize", {"protocolVersion": 2}, rid=3))
    assert (await second.next_message())["error"]["code"] == -32011
    second.feed(req("status", rid=4))
    assert (await second.next_message())["error"]["code"] == -32010
    assert "status" in first.connection.authority.admitted
    first.feed(req("status", rid=5))
    assert "result" in (await first.next_message())

    # A new policy generation starts from empty tables; the old one is left to whoever still holds it.
    old = first.connection.authority.admitted
    services.auth.generation += 1
    first.feed(req("status", rid=6))
    assert "result" in (await first.next_message())
    assert first.connection.authority.admitted is not old and set(first.connection.authority.admitted) == {"status"}


@pytest.mark.req("R-AUTH-5")
async def test_a_principal_that_lost_a_grant_does_not_inherit_the_shared_table() -> None:
    server, services = make_server()
    admin, other = await initialized(server), await initialized(server)
    admin.feed(req("status", rid=1))
    assert "result" in (await admin.next_message())
    services.auth.principal = FakePrincipal("user:bob", False, frozenset({"sessions:read"}))
    services.auth.generation += 1
    other.feed(req("status", rid=2))  # re-resolved as bob, who has no system:read
    assert (await other.next_message())["error"]["code"] == -32012
    other.feed(req("status", rid=3))
    assert (await other.next_message())["error"]["code"] == -32012


@pytest.mark.req("R-WIRE-7")
async def test_duplicate_id_of_an_async_call_is_refused_on_the_hot_path_too() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("test/sleep", {"secs": 0}, rid="warm"))
    assert (await t.next_message())["result"] == "slept"
    t.feed(req("test/sleep", {"secs": 0.1}, rid="x"))
    t.feed(req("test/sleep", {"secs": 0}, rid="x"))
    duplicate = await t.next_message()
    assert duplicate["id"] is None and duplicate["error"]["data"]["kind"] == "duplicate_id"
    assert (await t.next_message()) == {"jsonrpc": "2.0", "id": "x", "result": "slept"}


@pytest.mark.req("R-INIT-2")
async def test_status_answer_is_reused_only_while_nothing_it_shows_changed() -> None:
    server, services = make_server()
    t = await initialized(server)

    async def status() -> dict[str, Any]:
        t.feed(req("status", rid="st"))
        result: dict[str, Any] = (await t.next_message())["result"]
        return result

    first = await status()
    assert first["connections"] == 1 and first["sessionIds"] == [] and first["uptimeSecs"] == 0
    other = await initialized(server)  # same millisecond (the clock is frozen), one more connection
    assert (await status())["connections"] == 2
    services.sessions.live["s1"] = object()
    assert (await status())["sessionIds"] == ["s1"]
    services.sessions.live.pop("s1")
    services.sessions.live["s2"] = object()  # as many sessions as before, other ids
    assert (await status())["sessionIds"] == ["s2"]
    services.gateway_url = "http://127.0.0.1:1"
    assert (await status())["gateway"] == {"url": "http://127.0.0.1:1"}
    services.clock_ns = 1_233_999_999
    assert (await status())["uptimeSecs"] == 1.233
    services.clock_ns = 1_234_000_000  # the next millisecond, by one nanosecond
    assert (await status())["uptimeSecs"] == 1.234
    other.close()
    assert (await status())["connections"] == 1


@pytest.mark.req("R-WIRE-6")
async def test_slow_request_does_not_block_fast_one() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("test/sleep", {"secs": 0.2}, rid="slow"))
    t.feed(req("status", rid="fast"))
    assert (await t.next_message())["id"] == "fast"
    assert (await t.next_message())["id"] == "slow"


@pytest.mark.req("R-WIRE-7")
async def test_duplicate_in_flight_id_is_rejected_and_first_still_answered_once() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("test/sleep", {"secs": 0.1}, rid=7))
    t.feed(req("status", rid=7))
    dup = await t.next_message()
    assert dup == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Request id already in flight",
            "data": {"kind": "duplicate_id", "id": 7},
        },
    }
    first = await t.next_message()
    assert first == {"jsonrpc": "2.0", "id": 7, "result": "slept"}
    assert t.sent == []
    t.feed(req("status", rid=7))  # no longer in flight: fine again
    again = await t.next_message()
    assert again["id"] == 7 and again["result"]["pid"] == 1, again  # status's answer: no second "slept" came first


@pytest.mark.req("R-LIM")
async def test_inflight_cap_saturates_the_connection_until_one_finishes() -> None:
    server, _ = make_server(Limits(max_inflight_per_connection=2))
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    t.feed(req("test/sleep", {"secs": 0.05}, rid=1))
    assert not conn.saturated
    t.feed(req("test/sleep", {"secs": 0.05}, rid=2))
    assert conn.saturated
    await t.next_message()
    assert not conn.saturated and t.resumes >= 1


@pytest.mark.req("R-WIRE-5")
@pytest.mark.parametrize("method", ["test/sleep", "test/sometimes"])
async def test_disconnect_cancels_in_flight_without_answering(method: str) -> None:
    server, _ = make_server()
    t = await initialized(server)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.feed(req(method, {"secs": 5}, rid=1))
        t.close()  # before the call's task took its first step
        for _ in range(3):
            await asyncio.sleep(0)  # loop turns: the task's cancelled step, then its done callbacks
        gc.collect()
    assert t.sent == [] and server.connections == set()
    assert [str(w.message) for w in caught] == []  # no "coroutine ... was never awaited"


@pytest.mark.req("R-ARCH-2")
async def test_a_plain_handler_that_returns_a_coroutine_is_answered_when_it_finishes() -> None:
    # The first call of a method is admitted by the gate, later ones by `receive`'s fast branch: both run it.
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("test/sometimes", {"secs": 0.01}, rid=0))
    assert await t.next_message() == {"jsonrpc": "2.0", "id": 0, "result": "slept"}
    t.feed(req("test/sometimes", {"secs": 0}, rid=1))
    assert await t.next_message() == {"jsonrpc": "2.0", "id": 1, "result": "at once"}
    t.feed(req("test/sometimes", {"secs": 0.05}, rid=2))
    t.feed(req("status", rid=2))  # the waiting call is in flight: its id is taken
    assert (await t.next_message())["error"]["data"]["kind"] == "duplicate_id"
    assert await t.next_message() == {"jsonrpc": "2.0", "id": 2, "result": "slept"}
    t.feed(req("test/sometimes", {"secs": -1}, rid=3))
    error = (await t.next_message())["error"]
    assert error["code"] == -32603 and "passwd" not in str(error)


@pytest.mark.req("R-AUTH-5")
async def test_missing_grant_is_forbidden_and_a_revoked_credential_needs_auth() -> None:
    server, services = make_server()
    services.auth.principal = FakePrincipal("user:bob", False, frozenset({"sessions:read"}))
    t = await initialized(server)
    t.feed(req("status", rid=1))
    error = (await t.next_message())["error"]
    assert error["code"] == -32012 and error["data"] == {"kind": "forbidden", "grant": "system:read"}
    services.auth.principal = None
    services.auth.generation += 1
    t.feed(req("status", rid=2))
    assert (await t.next_message())["error"]["code"] == -32010


@pytest.mark.req("R-AUTH-3")
async def test_remote_peer_without_token_cannot_initialize() -> None:
    server, _ = make_server()
    t = MemoryTransport(server, Peer("ws:127.0.0.1:5", remote=True))
    t.feed(req("initialize", {"protocolVersion": 1}))
    assert (await t.next_message())["error"]["code"] == -32010
    t.feed(req("status", rid=2))
    assert (await t.next_message())["error"]["code"] == -32010


@pytest.mark.req("R-ARCH-2")
async def test_local_only_methods_refuse_remote_peers() -> None:
    server, _ = make_server()
    t = await initialized(server, Peer("ws:127.0.0.1:5", remote=True))
    t.feed(req("test/local", rid=1))
    error = (await t.next_message())["error"]
    assert error["code"] == -32012 and error["data"]["kind"] == "local_only"


# -- daemon → client requests (R-BIDI) ----------------------------------------------------------------


@pytest.mark.req("R-BIDI-2")
@pytest.mark.req("R-BIDI-3")
async def test_outbound_ids_count_per_connection_and_null_result_resolves() -> None:
    server, _ = make_server()
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    first = asyncio.create_task(conn.request("elicitation/create", {"q": 1}, timeout=2))
    out = await t.next_message()
    assert out["id"] == "zc-out-0" and out["method"] == "elicitation/create"
    t.feed({"jsonrpc": "2.0", "id": "zc-out-0", "result": None})
    assert await first is None
    second = asyncio.create_task(conn.request("elicitation/create", {}, timeout=2))
    assert (await t.next_message())["id"] == "zc-out-1"
    t.feed({"jsonrpc": "2.0", "id": "zc-out-1", "error": {"code": 1, "message": "no"}})
    with pytest.raises(PeerError):
        await second


@pytest.mark.req("R-BIDI-2")
async def test_same_id_in_flight_both_ways() -> None:
    server, _ = make_server()
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    outbound = asyncio.create_task(conn.request("elicitation/create", {}, timeout=2))
    assert (await t.next_message())["id"] == "zc-out-0"
    t.feed(req("test/sleep", {"secs": 0.05}, rid="zc-out-0"))  # the client's own request, same id
    t.feed({"jsonrpc": "2.0", "id": "zc-out-0", "result": {"action": "decline"}})
    assert await outbound == {"action": "decline"}
    assert await t.next_message() == {"jsonrpc": "2.0", "id": "zc-out-0", "result": "slept"}


@pytest.mark.req("R-BIDI-3")
async def test_answers_match_by_exact_id_only() -> None:
    server, _ = make_server()
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    pending = asyncio.create_task(conn.request("elicitation/create", {}, timeout=0.3))
    await t.next_message()  # sent, so pending
    for wrong in (0, "zc-out-00", "ZC-OUT-0", None):
        t.feed({"jsonrpc": "2.0", "id": wrong, "result": "x"})
    assert t.sent == []  # unknown ids are never answered
    with pytest.raises(TimeoutError):
        await pending


@pytest.mark.req("R-BIDI-4")
async def test_close_fails_every_pending_call_at_once() -> None:
    server, _ = make_server()
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    calls = [asyncio.create_task(conn.request("elicitation/create", {}, timeout=60)) for _ in range(3)]
    await until(lambda: len(t.sent) == 3, interval=0)  # each call is pending once its request is sent
    t.close()
    results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 1)
    assert all(isinstance(r, ConnectionClosed) for r in results)


@pytest.mark.req("R-LIM")
async def test_pending_client_request_cap() -> None:
    server, _ = make_server(Limits(max_pending_client_requests=1))
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    first = asyncio.create_task(conn.request("elicitation/create", {}, timeout=1))
    await t.next_message()  # sent, so pending
    with pytest.raises(PendingLimitReached):
        await conn.request("elicitation/create", {}, timeout=1)
    first.cancel()


@pytest.mark.req("R-LIM")
async def test_notify_waits_while_the_peer_is_not_reading() -> None:
    server, _ = make_server()
    t = await initialized(server)
    conn = t.connection
    assert conn is not None
    t.set_writing_paused(True)
    waits: list[bool] = []
    wait_writable = t.wait_writable

    async def recorded() -> None:
        waits.append(True)
        await wait_writable()

    t.wait_writable = recorded  # type: ignore[method-assign]
    producer = asyncio.create_task(conn.send_encoded(encode_notifications("session/update", [{"n": 1}])))
    await until(lambda: waits, interval=0)  # the producer waits for room
    assert not producer.done() and t.sent == []
    t.set_writing_paused(False)
    await producer
    assert (await t.next_message())["method"] == "session/update"


@pytest.mark.req("R-LIM")
async def test_connection_cap_refuses_with_one_error_frame() -> None:
    server, _ = make_server(Limits(max_connections=1))
    await initialized(server)
    refused = MemoryTransport(server)
    assert refused.connection is None and refused.closed
    (frame,) = refused.messages()
    assert frame["id"] is None and frame["error"]["code"] == -32005
    assert frame["error"]["data"] == {"kind": "limit_exceeded", "name": "connections", "limit": 1}


@pytest.mark.req("R-WIRE-4")
async def test_regression_messages_before_beyond_64_bits_is_invalid_params_not_internal() -> None:
    # Found by fuzzing the REST twin: SQLite cannot bind an integer past 2**63 - 1 (it was a -32603).
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("session/messages", {"sessionId": "s_1", "before": 2**63}, rid=1))
    error = (await t.next_message())["error"]
    assert error["code"] == -32602 and error["data"]["errors"][0]["field"] == "before"


class RecordingAudit(AuditLog):
    def __init__(self) -> None:
        super().__init__(None)
        self.events: list[tuple[str, str | None]] = []

    def record(self, event: str, peer: str, principal: str | None) -> None:
        self.events.append((event, principal))


@pytest.mark.req("R-SEC-3")
async def test_every_32010_and_32012_answer_is_audited_as_denied_even_from_inside_a_handler() -> None:
    server, services = make_server()
    audit = RecordingAudit()
    server.audit = services.audit = audit
    server.errors = ErrorBoundary(audit)  # the dispatcher's boundary audits refusals

    async def refuses(call: CallContext, params: NoParams) -> None:
        raise Forbidden("Missing grant config:update", grant="config:update")  # as a store's authorize does

    server.registry.method("test/refuses", params=NoParams, grant="system:read")(refuses)
    t = await initialized(server)
    t.feed(req("test/refuses", rid=1))
    assert (await t.next_message())["error"]["code"] == -32012
    services.auth.principal = None  # the credential is revoked
    services.auth.generation += 1
    t.feed(req("status", rid=2))
    assert (await t.next_message())["error"]["code"] == -32010
    assert [e for e, _ in audit.events].count("denied") == 2


async def next_raw(t: MemoryTransport) -> bytes:
    """The next frame exactly as written (`next_message` decodes it, and orjson would round a big id)."""
    await until(lambda: t.sent, 2.0, interval=0.005, what="a frame")
    return t.sent.pop(0)


def raw_req(method: str, rid: str, params: str | None = None) -> bytes:
    body = f'"params":{params},' if params is not None else ""
    return f'{{"jsonrpc":"2.0","method":"{method}",{body}"id":{rid}}}'.encode()


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize("rid", ["18446744073709551621", "-100000000000000000000000", "1.5", "-0.0"])
async def test_an_id_orjson_reads_as_a_float_is_answered_exactly_also_for_an_admitted_method(rid: str) -> None:
    server, _ = make_server()
    t = await initialized(server)
    for _ in range(2):  # first call admits `status`; the second would take the hot path but for its float id
        t.feed(raw_req("status", rid))
        assert (await next_raw(t)).startswith(b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"result":')
    t.feed(raw_req("test/sleep", rid, '{"secs":0}'))  # an async handler: answered from its task
    assert await next_raw(t) == b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"result":"slept"}'


@pytest.mark.req("R-WIRE-7")
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("100000000000000000000000000076", "100000000000000000000000000076"),
        ("1.5", "1.50"),  # one value, two spellings
        ("1.0", "1"),  # the int arrives on the hot path while the exact id is in flight
        ("1", "1.0"),
    ],
)
async def test_duplicate_detection_compares_exact_ids_by_value(first: str, second: str) -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(raw_req("status", "0"))
    await next_raw(t)
    t.feed(raw_req("test/sleep", first, '{"secs":0.1}'))
    t.feed(raw_req("status", second))
    dup = await next_raw(t)
    assert dup.startswith(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,')
    assert dup.endswith(b'"data":{"kind":"duplicate_id","id":' + second.encode() + b"}}}")
    assert await next_raw(t) == b'{"jsonrpc":"2.0","id":' + first.encode() + b',"result":"slept"}'


@pytest.mark.req("R-WIRE-7")
async def test_ids_that_differ_past_double_precision_are_not_duplicates() -> None:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(raw_req("test/sleep", "18446744073709551621", '{"secs":0.05}'))
    t.feed(raw_req("test/sleep", "18446744073709551622", '{"secs":0}'))  # the same float, another integer
    assert await next_raw(t) == b'{"jsonrpc":"2.0","id":18446744073709551622,"result":"slept"}'
    assert await next_raw(t) == b'{"jsonrpc":"2.0","id":18446744073709551621,"result":"slept"}'


@pytest.mark.req("R-WIRE-4")
async def test_a_notification_whose_handler_fails_later_is_logged_under_an_error_id_and_never_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression (issue 29): a notification's task that raised was left for asyncio to report when collected
    ("Task exception was never retrieved", with the traceback); it now goes through the error boundary."""
    server, _ = make_server()
    t = await initialized(server)
    t.feed({"jsonrpc": "2.0", "method": "test/sometimes", "params": {"secs": -1}})  # fails after its first step
    t.feed({"jsonrpc": "2.0", "method": "test/boom"})  # fails at once

    def failures() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.getMessage().startswith("unexpected failure error_id=")]

    await until(lambda: len(failures()) == 2 and t.connection is not None and t.connection.idle, interval=0)
    assert t.sent == [] and len(failures()) == 2
    t.feed(req("status", rid=7))
    assert (await t.next_message())["id"] == 7
