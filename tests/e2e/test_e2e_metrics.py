"""`GET /metrics` and `--log-format json` on a real `zeroclaw daemon` (docs/operations.md, "Metrics and structured
logs"; R-GW-2 for the route, R-AUTH-5 for its grant, R-SEC-6 for what the logs may carry)."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """
[permission_profiles.admin]
admin = true

[permission_profiles.reader]
grants = { system = ["read"] }

[permission_profiles.nobody]

[users.ops]
permission_profiles = ["admin"]

[users.watcher]
permission_profiles = ["reader"]

[users.eve]
permission_profiles = ["nobody"]
"""


def start(factory: DaemonFactory, *args: str) -> tuple[Daemon, str]:
    d = factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0", *args])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


async def tokens(d: Daemon, *users: str) -> list[str]:
    """A paired token per user, made by the owner over the socket (the same uid: admin)."""
    async with await d.client() as c:
        return [(await c.call("pairing/create", {"user": user}))["token"] for user in users]


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, frozenset(sample.labels.items())] = sample.value
    return out


def get(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.req("R-GW-2")
@pytest.mark.req("R-AUTH-5")
async def test_metrics_over_the_gateway(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    ops, watcher, eve = await tokens(d, "ops", "watcher", "eve")
    async with await d.client() as c:
        sid = (await c.call("session/new", {}))["sessionId"]
        prompt = await c.call("session/prompt", {"sessionId": sid, "prompt": "hello"})
        for _ in range(3):
            await c.call("status", {})
        async with httpx.AsyncClient(base_url=url, trust_env=False) as client:
            assert (await client.get("/metrics")).status_code == 401
            refused = await client.get("/metrics", headers={"Authorization": f"Bearer {eve}"})
            assert refused.status_code == 403
            assert (await client.get("/api/status", headers={"Authorization": f"Bearer {ops}"})).status_code == 200
            response = await client.get("/metrics", headers={"Authorization": f"Bearer {watcher}"})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        # The same text over JSON-RPC, for a local client.
        local = await c.call("system/metrics", {})
    assert isinstance(local, str) and "zeroclaw_connections" in local
    found = samples(response.text)
    families = {family.name: family.type for family in text_string_to_metric_families(response.text)}
    assert families["zeroclaw_connections"] == "gauge"
    assert families["zeroclaw_requests"] == "counter"
    assert families["zeroclaw_inflight_requests"] == "gauge"
    assert families["zeroclaw_turn_duration_seconds"] == "histogram"
    assert families["zeroclaw_storage_operation_seconds"] == "histogram"
    assert families["zeroclaw_outbound_queued_bytes"] == "gauge"
    assert families["zeroclaw_stalled_peers"] == "counter"
    assert families["zeroclaw_upload_staged_bytes"] == "gauge"
    assert families["zeroclaw_gc_pause_seconds"] == "histogram"
    assert "process_resident_memory_bytes" in families
    assert get(found, "zeroclaw_connections", surface="local") == 1  # the client above, still open
    assert get(found, "zeroclaw_connections", surface="websocket") == 0
    assert get(found, "zeroclaw_requests_total", method="status", outcome="ok") == 4  # 3 + GET /api/status
    assert get(found, "zeroclaw_requests_total", method="session/prompt", outcome="ok") == 1
    assert get(found, "zeroclaw_requests_total", method="system/metrics", outcome="forbidden") == 1
    assert get(found, "zeroclaw_inflight_requests") == 0
    reason = prompt["stopReason"]
    assert get(found, "zeroclaw_turn_duration_seconds_count", stop_reason=reason) == 1
    assert get(found, "zeroclaw_turn_duration_seconds_sum", stop_reason=reason) > 0
    assert get(found, "zeroclaw_storage_operation_seconds_count", operation="write") >= 3  # tokens, session, turn
    assert get(found, "zeroclaw_stalled_peers_total") == 0
    assert get(found, "zeroclaw_upload_staged_bytes") == 0
    # Building the gateway's routes on its first request alone makes thousands of objects: collections ran.
    assert sum(get(found, "zeroclaw_gc_pause_seconds_count", generation=str(g)) for g in range(3)) >= 1
    for token in (ops, watcher, eve):
        assert token not in response.text and token not in d.stderr


@pytest.mark.req("R-SEC-6")
async def test_json_logs_are_one_object_a_line_and_keep_secrets_out(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory, "--log-format", "json")
    (eve,) = await tokens(d, "eve")
    async with httpx.AsyncClient(base_url=url, trust_env=False) as client:
        refused = await client.get("/metrics", headers={"Authorization": f"Bearer {eve}"})
    assert refused.status_code == 403
    await d.wait_stderr(lambda text: "denied" in text)
    d.stop()
    lines = [line for line in d.stderr_lines if line.strip()]
    assert d.ready_line in lines
    records: list[dict[str, Any]] = [json.loads(line) for line in lines if line != d.ready_line]
    assert records
    for record in records:
        assert {"ts", "level", "logger", "message"} <= set(record), record
        assert record["ts"].endswith("Z")
    denied = [r for r in records if r["logger"] == "zeroclaw.audit" and r["message"].startswith("denied")]
    assert denied, records
    assert denied[-1]["level"] == "INFO"
    assert eve not in d.stderr and eve.removeprefix("zc_") not in d.stderr
