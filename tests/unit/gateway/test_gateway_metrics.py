"""`GET /metrics` and `system/metrics` (docs/operations.md, "Metrics and structured logs"): the values move as
connections, requests, stalls, storage units, turns and uploads happen; the route needs `system:read`."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest
from gateway_env import Env, EnvFactory
from prometheus_client.parser import text_string_to_metric_families
from test_gateway_ws_transport import FakeSocket
from waiting import until

from app.files.service import FileService
from rpc.core.context import CallContext
from rpc.core.registry import NoParams
from rpc.transports.base import Peer
from rpc.transports.memory import MemoryTransport
from rpc.transports.websocket import WebSocketTransport, websocket_peer

pytestmark = pytest.mark.req("R-GW-2")

INIT = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 0}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition, keyed by (name, labels)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, frozenset(sample.labels.items())] = sample.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


async def scrape(env: Env) -> str:
    """The exposition, through the same method the route calls (the dispatcher's own HTTP context)."""
    _, token = await env.token()
    transport = httpx.ASGITransport(app=env.app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/metrics", headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.text


def local_peer(env: Env) -> MemoryTransport:
    transport = MemoryTransport(env.server, Peer("memory", uid=os.getuid()))
    transport.feed(INIT)
    return transport


def call(transport: MemoryTransport, method: str, rid: int, params: Any = None) -> None:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        frame["params"] = params
    transport.feed(frame)


@pytest.mark.req("R-AUTH-5")
async def test_metrics_needs_a_token_with_system_read(client: httpx.AsyncClient, env: Env) -> None:
    assert (await client.get("/metrics")).status_code == 401
    _, eve = await env.token("eve")  # no grants
    refused = await client.get("/metrics", headers=bearer(eve))
    assert refused.status_code == 403
    assert refused.json()["error"]["kind"] == "forbidden"
    _, alice = await env.token("alice")  # system:read, no admin
    response = await client.get("/metrics", headers=bearer(alice))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    names = {family.name for family in text_string_to_metric_families(response.text)}
    assert {
        "zeroclaw_connections",
        "zeroclaw_requests",
        "zeroclaw_inflight_requests",
        "zeroclaw_outbound_queued_bytes",
        "zeroclaw_stalled_peers",
        "zeroclaw_turn_duration_seconds",
        "zeroclaw_storage_operation_seconds",
        "zeroclaw_upload_staged_bytes",
        "zeroclaw_uploads_staged",
        "zeroclaw_gc_pause_seconds",
    } <= names
    # The refusal above is counted under the method the route runs.
    assert value(response.text, "zeroclaw_requests_total", method="system/metrics", outcome="forbidden") == 1


async def test_connections_and_requests_move_with_the_traffic(env: Env) -> None:
    before = await scrape(env)
    assert value(before, "zeroclaw_connections", surface="local") == 0
    peer = local_peer(env)
    for rid in (1, 2, 3):
        call(peer, "status", rid)
    call(peer, "no/such-method", 4)
    call(peer, "config/get", 5, {"prop": "no.such.prop"})
    peer.feed(b"{not json")
    await peer.next_message()
    during = await scrape(env)
    assert value(during, "zeroclaw_connections", surface="local") == 1
    assert value(during, "zeroclaw_connections", surface="websocket") == 0
    assert value(during, "zeroclaw_requests_total", method="initialize", outcome="ok") == 1
    assert value(during, "zeroclaw_requests_total", method="status", outcome="ok") == 3
    # A method name the peer made up is never a label of its own.
    assert value(during, "zeroclaw_requests_total", method="other", outcome="method_not_found") == 1
    assert value(during, "zeroclaw_requests_total", method="other", outcome="parse_error") == 1
    assert value(during, "zeroclaw_requests_total", method="config/get", outcome="invalid_params") == 1
    assert "no/such-method" not in during
    peer.queued = 1234
    assert value(await scrape(env), "zeroclaw_outbound_queued_bytes") == 1234
    peer.close()
    after = await scrape(env)
    assert value(after, "zeroclaw_connections", surface="local") == 0
    assert value(after, "zeroclaw_outbound_queued_bytes") == 0
    assert value(after, "zeroclaw_requests_total", method="status", outcome="ok") == 3  # a counter: it stays


async def test_inflight_counts_the_calls_running_now(env: Env) -> None:
    release = asyncio.Event()

    async def wait(ctx: CallContext, params: NoParams) -> str:
        await release.wait()
        return "done"

    env.registry.method("test/wait", params=NoParams, grant="system:read")(wait)
    peer = local_peer(env)
    call(peer, "test/wait", 1)
    call(peer, "test/wait", 2)
    await until(lambda: peer.connection is not None and len(peer.connection.inflight) == 2)
    assert value(await scrape(env), "zeroclaw_inflight_requests") == 2
    release.set()
    await until(lambda: peer.connection is not None and not peer.connection.inflight)
    done = await scrape(env)
    assert value(done, "zeroclaw_inflight_requests") == 0
    assert value(done, "zeroclaw_requests_total", method="test/wait", outcome="ok") == 2
    peer.close()


@pytest.mark.req("R-LIM")
async def test_a_websocket_peer_cut_off_for_stalling_is_counted(make_env: EnvFactory) -> None:
    env = await make_env(max_outbound_buffer_bytes=65536, outbound_stall_secs=0.2)
    sock = FakeSocket()
    sock.blocked = True  # reads nothing
    transport = WebSocketTransport(sock, env.server, websocket_peer(("127.0.0.1", 6), None))
    runner = asyncio.create_task(transport.run())
    await until(lambda: len(env.server.connections) == 1)
    for _ in range(3):
        transport.send(b'{"jsonrpc":"2.0","id":1,"result":"' + b"s" * 40000 + b'"}')
    during = await scrape(env)
    assert value(during, "zeroclaw_connections", surface="websocket") == 1
    assert value(during, "zeroclaw_outbound_queued_bytes") >= 120000
    assert value(during, "zeroclaw_stalled_peers_total") == 0
    await asyncio.wait_for(runner, 2)
    after = await scrape(env)
    assert value(after, "zeroclaw_stalled_peers_total") == 1
    assert value(after, "zeroclaw_connections", surface="websocket") == 0


async def test_storage_units_are_timed_by_operation(env: Env) -> None:
    assert await env.services.db.read(lambda session: 7) == 7
    first = await scrape(env)  # pairing its token wrote a row
    writes = value(first, "zeroclaw_storage_operation_seconds_count", operation="write")
    assert writes >= 1
    assert value(first, "zeroclaw_storage_operation_seconds_count", operation="read") == 1
    assert value(first, "zeroclaw_storage_operation_seconds_bucket", operation="write", le="+Inf") == writes
    second = await scrape(env)
    assert value(second, "zeroclaw_storage_operation_seconds_count", operation="write") > writes


async def test_turn_durations_are_a_histogram_by_stop_reason(env: Env) -> None:
    env.services.observations.turn_ended("end_turn", 0.3)
    env.services.observations.turn_ended("end_turn", 42.0)
    env.services.observations.turn_ended("cancelled", 0.01)
    text = await scrape(env)
    assert value(text, "zeroclaw_turn_duration_seconds_count", stop_reason="end_turn") == 2
    assert value(text, "zeroclaw_turn_duration_seconds_sum", stop_reason="end_turn") == pytest.approx(42.3)
    assert value(text, "zeroclaw_turn_duration_seconds_bucket", stop_reason="end_turn", le="0.5") == 1
    assert value(text, "zeroclaw_turn_duration_seconds_bucket", stop_reason="end_turn", le="60.0") == 2
    assert value(text, "zeroclaw_turn_duration_seconds_count", stop_reason="cancelled") == 1


async def test_staged_upload_bytes_follow_the_budget(env: Env) -> None:
    assert value(await scrape(env), "zeroclaw_upload_staged_bytes") == 0  # no files service made yet
    files = FileService(env.services.sessions, lambda: env.services.config.limits)
    env.services.files = files
    charge = files.budget.charge(4096)
    assert charge is not None
    assert value(await scrape(env), "zeroclaw_upload_staged_bytes") == 4096
    charge.release()
    assert value(await scrape(env), "zeroclaw_upload_staged_bytes") == 0
    files.close()


async def test_each_daemon_has_its_own_registry(make_env: EnvFactory) -> None:
    first, second = await make_env(), await make_env()
    peer = local_peer(first)
    call(peer, "status", 1)
    await until(lambda: len(peer.sent) == 2)
    assert value(await scrape(first), "zeroclaw_requests_total", method="status", outcome="ok") == 1
    assert value(await scrape(second), "zeroclaw_requests_total", method="status", outcome="ok") == 0
    peer.close()
