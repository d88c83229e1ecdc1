"""`zeroclaw_gc_pause_seconds` (issue 16, docs/limits.md "Garbage"): every collection of the cyclic GC is timed
by generation while the watch is on, and none after it is stopped."""

from __future__ import annotations

import gc

import pytest

from app.self_metrics import Observations


@pytest.mark.req("R-LIM")
def test_each_collection_is_timed_by_generation_until_stopped() -> None:
    observations = Observations()
    stop = observations.watch_gc()
    try:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
    finally:
        stop()
    pauses = observations.gc_pauses
    assert pauses["0"].count >= 1 and pauses["2"].count >= 2
    assert pauses["2"].total > 0
    counted = {generation: t.count for generation, t in pauses.items()}
    gc.collect()
    assert {generation: t.count for generation, t in pauses.items()} == counted
