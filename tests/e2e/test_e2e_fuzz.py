"""A seeded 20,000-frame wire fuzz run against a real daemon, over Unix-socket and WebSocket peers at once
(issue 16; the generator and oracle are `benchmarks/fuzz.py`, which runs 10^6 frames).

What it pins:

* R-WIRE-1 — NDJSON framing: CRLF, blank lines and frames split across writes; one message per WebSocket text frame.
* R-WIRE-2 — frames just under and exactly at the (configured) limit are served; one just over gets one `-32600`
  `id: null` `frame_too_large` with `data.limit`, then the connection closes (WebSocket close 1009).
* R-WIRE-3 — invalid JSON / UTF-8 → `-32700` `id: null` and the connection goes on; malformed request envelopes
  → `-32600` under their id when it is valid, else `null`; direction-ambiguous frames (non-objects, batches,
  `method` with `result`) → `-32600` `id: null`; responses, valid or malformed, are never answered; every answer
  carries the request's id exactly (strings, fractions, exponents, integers beyond 64 bits never rounded).
* R-WIRE-4 — unknown method `-32601`; params that fail validation `-32602` with `data.errors` and no echoed value.
* R-WIRE-5 — exactly one answer per request id, none for notifications, also for requests written before an
  oversize frame.
* R-WIRE-9 — a socket peer that half-closes still gets every answer, then EOF.
* R-ERR — every error is `{code, message, data: {kind}}` with the kind of its code.
* R-GW-4 — the same envelope rules over the WebSocket; local-only methods there → `-32012` (`local_only`), before
  params are looked at.
* R-SEC-6 — no answer and no daemon log line contains a params value.

No crash, no hang (every answer within 10 s), RSS growth after the warm-up bounded (20 MiB, the issue's target for
10^6 frames).

When written (2026-12-01) it found two daemon bugs, fixed with regression tests of their own: requests with async
handlers written before an oversize frame were never answered, the close came first (R-WIRE-5;
`tests/unit/rpc/test_stream_eof_and_stall.py`, `tests/unit/gateway/test_gateway_ws_transport.py`); and an integer
id beyond 64 bits in a frame nested past the stdlib decoder's recursion limit came back rounded (R-WIRE-3;
`tests/unit/rpc/test_exact_ids.py`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from e2e_harness import DaemonFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fuzz

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.req("R-WIRE-1"),
    pytest.mark.req("R-WIRE-2"),
    pytest.mark.req("R-WIRE-3"),
    pytest.mark.req("R-WIRE-4"),
    pytest.mark.req("R-WIRE-5"),
    pytest.mark.req("R-WIRE-9"),
    pytest.mark.req("R-GW-4"),
    pytest.mark.req("R-SEC-6"),
]

FRAMES = 20_000
SEED = 16
RSS_BOUND = 20 * 1024 * 1024


async def test_fuzz_20000_seeded_frames(daemon_factory: DaemonFactory) -> None:
    result = await fuzz.run_fuzz(
        daemon_factory, frames=FRAMES, seed=SEED, peers=4, ws_peers=2, time_limit=40, hang_timeout=10
    )
    print(result.summary())
    kinds = [f"{count} x {kind}" for kind, count in result.stats.kinds.most_common()]
    report = "\n".join([result.summary(), *kinds, *result.stats.details])
    assert result.stats.frames >= FRAMES, report  # all sent within the time limit
    assert result.stats.crashes == 0, report
    assert result.stats.hangs == 0, report
    assert result.stats.violations == 0, report
    assert result.stats.oversize_closes > 0, report  # the generator did reach the close path
    assert result.rss_growth <= RSS_BOUND, report
