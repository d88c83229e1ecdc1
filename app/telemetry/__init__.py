"""Traces of turns (R-MODEL-6, docs/operations.md "Traces"): the seam the turn code calls, and the switch that
turns OpenTelemetry on.

Off (the default: no `[telemetry] otlp_endpoint`, no `OTEL_EXPORTER_OTLP_ENDPOINT`), every call here is a no-op on
shared objects and no OpenTelemetry module is imported. On (with the `zeroclaw[otel]` extra installed),
`app.telemetry.otel` makes one trace per turn following OpenTelemetry's GenAI semantic conventions:

    invoke_agent <agent>        the turn (Turns._turn): session id, agent, turn id, stop reason, summed tokens
      chat <model>              one per provider step (run_turn): provider, model, tokens, finish reasons
      execute_tool <tool>       one per tool call (run_turn), approval included

The turn's trace is this task's `current_turn()` (a ContextVar: the turn's body task inherits it), and while a
`chat` span is open `trace_headers()` holds its W3C `traceparent` for the provider's HTTP request
(app/agents/providers/http.py). Those live in `app.telemetry.seam`, which `app.telemetry.otel` shares.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from app.telemetry.seam import NOOP_TRACER, NOOP_TURN, Tracer, TurnTrace, current_turn, trace_headers

if TYPE_CHECKING:
    from app.config.schema import Telemetry

__all__ = [
    "NOOP_TRACER",
    "NOOP_TURN",
    "Tracer",
    "TurnTrace",
    "current_turn",
    "endpoint_of",
    "start_tracing",
    "trace_headers",
]

log = logging.getLogger("zeroclaw.telemetry")

TRACES_PATH = "/v1/traces"


def endpoint_of(settings: Telemetry, environ: Mapping[str, str] | None = None) -> str | None:
    """Where spans go, or None when tracing is off. `[telemetry] otlp_endpoint` is a collector's base URL
    (`http://127.0.0.1:4318`; `/v1/traces` is added unless it ends with it). Unset, the standard variables
    decide: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL).
    `OTEL_SDK_DISABLED=true` turns it off whatever is set."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if settings.otlp_endpoint:
        base = settings.otlp_endpoint.rstrip("/")
        return base if base.endswith(TRACES_PATH) else base + TRACES_PATH
    if traces := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return traces
    if base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        base = base.rstrip("/")
        return base if base.endswith(TRACES_PATH) else base + TRACES_PATH
    return None


def start_tracing(settings: Telemetry, environ: Mapping[str, str] | None = None) -> Tracer:
    """The daemon's tracer: OpenTelemetry's when an endpoint is set and the `[otel]` extra is installed, else the
    no-op one (without importing OpenTelemetry at all). A missing extra is one warning, never a failed start."""
    endpoint = endpoint_of(settings, environ)
    if endpoint is None:
        return NOOP_TRACER
    try:
        from app.telemetry.otel import OtelTracer
    except ImportError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        log.warning(
            "traces are off: an OTLP endpoint is set but OpenTelemetry is not installed (pip install 'zeroclaw[otel]')"
        )
        return NOOP_TRACER
    env = os.environ if environ is None else environ
    name = settings.service_name or env.get("OTEL_SERVICE_NAME") or "zeroclaw"
    log.info("traces: OTLP/HTTP to %s as service %s", _shown(endpoint), name)
    return OtelTracer(endpoint=endpoint, service_name=name)


def _shown(url: str) -> str:
    """A URL for the log: no userinfo, no query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"
