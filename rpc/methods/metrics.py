"""`system/metrics` (and `GET /metrics`): the daemon's counters in the Prometheus text format (docs/operations.md).

Nothing is counted on the request path beyond one list increment on the method's registry entry
(`MethodSpec.answered`, rpc/core/registry.py): a custom collector reads the daemon's `traffic()`, the domain's
`Observations` and the files service when scraped, and `prometheus_client` renders them. Each daemon has its own
`CollectorRegistry` (built by its first scrape, so a daemon never scraped never imports `prometheus_client`); the
library's global registry is not used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, cast

from rpc.core.context import CallContext, DaemonView
from rpc.core.registry import NoParams

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import HistogramMetricFamily, Metric
    from prometheus_client.registry import Collector

    from app.self_metrics import Timings
    from app.services import Services

__all__ = ["SURFACES", "DaemonCollector", "MetricsAnswer"]

SURFACES = ("local", "websocket")  # connection surfaces, each reported even at 0 (HTTP calls hold no connection)


class DaemonCollector:
    """The `zeroclaw_*` families, read at scrape time."""

    def __init__(self, daemon: DaemonView, services: Services) -> None:
        self._daemon = daemon
        self._services = services

    def collect(self) -> Iterator[Metric]:
        yield from self._traffic()
        yield from self._durations()
        yield from self._uploads()
        yield from self._providers()

    def _traffic(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        traffic = self._daemon.traffic()
        connections = GaugeMetricFamily(
            "zeroclaw_connections", "Open JSON-RPC connections by surface", labels=["surface"]
        )
        for surface in SURFACES:
            connections.add_metric([surface], traffic.connections.get(surface, 0))
        yield connections

        requests = CounterMetricFamily(
            "zeroclaw_requests",
            "Requests answered, by method and outcome (ok, or the error kind)",
            labels=["method", "outcome"],
        )
        for (method, outcome), count in sorted(traffic.answers.items()):
            requests.add_metric([method, outcome], count)
        yield requests

        yield GaugeMetricFamily("zeroclaw_inflight_requests", "Requests running now", value=traffic.inflight)
        yield GaugeMetricFamily(
            "zeroclaw_outbound_queued_bytes",
            "Bytes queued towards peers and not yet written, over all connections",
            value=traffic.queued_bytes,
        )
        yield CounterMetricFamily(
            "zeroclaw_stalled_peers",
            "Peers cut off for not reading their output within outbound_stall_secs",
            value=traffic.stalls,
        )

    def _durations(self) -> Iterator[Metric]:
        observations = self._services.observations
        yield _histograms(
            "zeroclaw_turn_duration_seconds",
            "Duration of agent turns by stop reason",
            "stop_reason",
            observations.turns,
        )
        yield _histograms(
            "zeroclaw_storage_operation_seconds",
            "Duration of storage units of work, queueing included, by operation",
            "operation",
            observations.storage,
        )
        yield _histograms(
            "zeroclaw_gc_pause_seconds",
            "Pauses of Python's cyclic garbage collector, which the event loop waits for, by generation",
            "generation",
            observations.gc_pauses,
        )

    def _uploads(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        files = self._services.files  # not made here: a daemon never asked about files has staged nothing
        yield GaugeMetricFamily(
            "zeroclaw_upload_staged_bytes",
            "Bytes charged to the upload budget by staged uploads (declared sizes plus metadata)",
            value=files.budget.used if files is not None else 0,
        )
        yield GaugeMetricFamily(
            "zeroclaw_uploads_staged", "Uploads staged and not yet committed", value=files.staged() if files else 0
        )

    def _providers(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily

        observations = self._services.observations
        tokens = CounterMetricFamily(
            "zeroclaw_provider_tokens",
            "Tokens the providers counted, by provider alias, model and kind (input, output, cache_read, cache_write)",
            labels=["provider", "model", "kind"],
        )
        for (provider, model, kind), count in sorted(observations.provider_tokens.items()):
            tokens.add_metric([provider, model, kind], count)
        yield tokens
        cost = CounterMetricFamily(
            "zeroclaw_provider_cost_usd",
            "What the provider steps cost in USD, from [providers.<p>.pricing] (unpriced steps add nothing)",
            labels=["provider", "model"],
        )
        for (provider, model), usd in sorted(observations.provider_cost.items()):
            cost.add_metric([provider, model], usd)
        yield cost


def _histograms(name: str, documentation: str, label: str, by_label: Mapping[str, Timings]) -> HistogramMetricFamily:
    from prometheus_client.core import HistogramMetricFamily

    family = HistogramMetricFamily(name, documentation, labels=[label])
    for value, timings in sorted(by_label.items()):
        family.add_metric([value], buckets=timings.cumulative(), sum_value=timings.total)
    return family


class MetricsAnswer:
    """The `system/metrics` handler of one daemon (one registry per `build_registry()`, i.e. per daemon)."""

    def __init__(self) -> None:
        self._registry: CollectorRegistry | None = None

    def answer(self, ctx: CallContext, params: NoParams) -> str:
        from prometheus_client import generate_latest

        if self._registry is None:
            self._registry = _registry(ctx.daemon_view, ctx.services)
        return generate_latest(self._registry).decode()


def _registry(daemon: DaemonView, services: Services) -> CollectorRegistry:
    from prometheus_client import CollectorRegistry, ProcessCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(cast("Collector", DaemonCollector(daemon, services)))  # duck-typed: its base is imported late
    ProcessCollector(registry=registry)  # process_* : RSS, CPU seconds, open descriptors (Linux only)
    return registry
