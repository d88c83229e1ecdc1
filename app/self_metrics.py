"""What the daemon measures about itself, as plain counters read at scrape time (`GET /metrics`, docs/operations.md).

The domain records durations here (`Timings.observe`: a bisect and two additions, no lock: everything runs on the
event loop); `rpc.methods.metrics` turns them into Prometheus histograms when scraped. Nothing here knows the exposition
format or imports `prometheus_client`, so a daemon that is never scraped never loads it.
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from app.agents.base import Usage

__all__ = ["GC_BUCKETS", "STORAGE_BUCKETS", "TURN_BUCKETS", "Observations", "Timings"]

# Upper bounds in seconds (Prometheus `le`, inclusive); +Inf is implied.
STORAGE_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
TURN_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
GC_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5)


class Timings:
    """A histogram's raw state: a count per bucket (not cumulative; the last one is +Inf) and the sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """`(le, cumulative count)` pairs, `+Inf` last: the buckets as a Prometheus histogram states them."""
        out: list[tuple[str, int]] = []
        running = 0
        for bound, count in zip((*(repr(b) for b in self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


def _storage() -> dict[str, Timings]:
    return {"read": Timings(STORAGE_BUCKETS), "write": Timings(STORAGE_BUCKETS)}


def _gc_generations() -> dict[str, Timings]:
    return {str(generation): Timings(GC_BUCKETS) for generation in range(3)}


@dataclass(eq=False)
class Observations:
    """One daemon's measurements: storage units by kind (`read`, `write`), turns by stop reason, and the cyclic
    garbage collector's pauses by generation."""

    storage: dict[str, Timings] = field(default_factory=_storage)
    turns: dict[str, Timings] = field(default_factory=dict)
    gc_pauses: dict[str, Timings] = field(default_factory=_gc_generations)
    # R-MODEL-5: tokens by (provider alias, model, kind) and USD by (provider alias, model), summed per step.
    provider_tokens: dict[tuple[str, str, str], int] = field(default_factory=dict)
    provider_cost: dict[tuple[str, str], float] = field(default_factory=dict)

    def watch_gc(self) -> Callable[[], None]:
        """Time every collection from now on (the event loop waits for each: docs/limits.md "Garbage"); returns the
        function that stops it. Collections never overlap, so one start time is enough."""
        pauses = self.gc_pauses
        started = 0.0

        def on_collection(phase: str, info: dict[str, Any]) -> None:
            nonlocal started
            if phase == "start":
                started = perf_counter()
            else:
                pauses[str(info["generation"])].observe(perf_counter() - started)

        gc.callbacks.append(on_collection)
        return lambda: gc.callbacks.remove(on_collection)

    def turn_ended(self, stop_reason: str, seconds: float) -> None:
        timings = self.turns.get(stop_reason)
        if timings is None:
            timings = self.turns[stop_reason] = Timings(TURN_BUCKETS)
        timings.observe(seconds)

    def provider_used(self, provider: str, model: str, usage: Usage, cost: float | None) -> None:
        """One provider step's tokens (and cost, when priced) (`app.sessions.live.usage.UsageMeter`)."""
        tokens = self.provider_tokens
        for kind, count in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cache_read_tokens),
            ("cache_write", usage.cache_write_tokens),
        ):
            key = (provider, model, kind)
            tokens[key] = tokens.get(key, 0) + count
        if cost is not None:
            self.provider_cost[provider, model] = self.provider_cost.get((provider, model), 0.0) + cost
