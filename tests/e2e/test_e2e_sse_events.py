"""`GET /api/sessions/{id}/events` of a real daemon, read with `httpx-sse` (R-ECO-2, R-ECO-4): `id:` = seq, a
reader cut off mid-turn resumes with `Last-Event-ID` and loses nothing, a reader too far behind is told `gap`, and
the guards (bearer or `?token=`, ownership, Origin)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from httpx_sse import aconnect_sse
from session_client import Peer
from test_e2e_gateway_sessions import CONFIG, tokens

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")


def start(factory: DaemonFactory) -> tuple[Daemon, str]:
    d = factory.start(CONFIG + "\n[limits]\nreplay_events = 40\n", no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


async def read_events(
    http: httpx.AsyncClient, sid: str, token: str, *, last: int | None = None, stop_after: int | None = None
) -> list[tuple[str, str, dict[str, Any]]]:
    """(event, id, data) until `turn_complete`, or until `stop_after` events (then the reader hangs up)."""
    headers = {"Authorization": f"Bearer {token}"}
    if last is not None:
        headers["Last-Event-ID"] = str(last)
    out: list[tuple[str, str, dict[str, Any]]] = []
    async with aconnect_sse(http, "GET", f"/api/sessions/{sid}/events", headers=headers) as source:
        assert source.response.status_code == 200, await source.response.aread()
        async for sse in source.aiter_sse():
            data = json.loads(sse.data)
            out.append((sse.event, sse.id, data))
            if sse.event == "gap" or data.get("type") == "turn_complete":
                break
            if stop_after is not None and len(out) >= stop_after:
                break
    return out


@pytest.mark.req("R-ECO-2")
@pytest.mark.req("R-ECO-4")
async def test_sse_resumes_with_last_event_id_and_loses_nothing(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    t = await tokens(d, "alice")
    async with (
        await Peer.open(d, token=t["alice"]) as owner,
        httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http,
    ):
        sid = (await owner.call("session/new", {}))["sessionId"]
        # from the start (`Last-Event-ID: 0`), whenever this reader is attached: before the turn, during or after
        first = asyncio.ensure_future(read_events(http, sid, t["alice"], last=0, stop_after=5))
        mark, answer = await owner.start_prompt(sid, "/stream 30")
        got = await first
        assert all(event == "message" for event, _, _ in got), got
        last = int(got[-1][1])
        rest = await read_events(http, sid, t["alice"], last=last)
        turn = await owner.finish_turn(sid, mark, answer)
    events = [data for _, _, data in got + rest]
    assert [int(i) for _, i, _ in got + rest] == [e["seq"] for e in events]
    assert events == turn.updates
    assert len(got) == 5 and turn.updates[-1]["type"] == "turn_complete"  # every update once, in order


@pytest.mark.req("R-ECO-2")
async def test_sse_gap_and_guards(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    t = await tokens(d, "alice", "bob")
    async with (
        await Peer.open(d, token=t["alice"]) as owner,
        httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as http,
    ):
        sid = (await owner.call("session/new", {}))["sessionId"]
        turn = await owner.prompt(sid, "/stream 100")  # more updates than `replay_events = 40`
        last_seq = turn.updates[-1]["seq"]
        gap = await read_events(http, sid, t["alice"], last=1)
        assert gap == [("gap", "", {"seq": last_seq})]
        tail = await read_events(http, sid, t["alice"], last=last_seq - 5)
        assert [int(i) for _, i, _ in tail] == list(range(last_seq - 4, last_seq + 1))

        path = f"/api/sessions/{sid}/events"
        assert (await http.get(path)).status_code == 401
        bob = await http.get(path, headers={"Authorization": f"Bearer {t['bob']}"})
        assert bob.status_code == 403 and bob.json()["error"]["kind"] == "session_not_owned"
        evil = await http.get(path, headers={"Authorization": f"Bearer {t['alice']}", "Origin": "https://evil.test"})
        assert evil.status_code == 403
        beyond = await read_events(http, sid, t["alice"], last=99999)  # from another life of the session: a gap
        assert beyond == [("gap", "", {"seq": last_seq})]
        # `?token=` (a browser's EventSource sends no headers)
        async with http.stream("GET", path, params={"token": t["alice"]}, headers={"Last-Event-ID": "1"}) as r:
            assert r.status_code == 200
            text = ""
            async for part in r.aiter_text():
                text += part
                if "\n\n" in text:
                    break
            assert text.startswith("retry: 1000\nevent: gap"), text  # a reader cut off is back in a second
