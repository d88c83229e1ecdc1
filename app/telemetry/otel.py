"""The OpenTelemetry side of `app.telemetry` (R-MODEL-6): imported only when tracing is on (the `[otel]` extra).

Spans follow the GenAI semantic conventions (gen-ai-spans, gen-ai-agent-spans):

    invoke_agent <agent>   INTERNAL  gen_ai.operation.name, gen_ai.agent.name, gen_ai.conversation.id (the session
                                     id), zeroclaw.turn.id, zeroclaw.turn.stop_reason, the turn's summed
                                     gen_ai.usage.*
    chat <model>           CLIENT    gen_ai.operation.name, gen_ai.provider.name (the provider kind),
                                     gen_ai.request.model, server.address/server.port (remote kinds),
                                     gen_ai.usage.input_tokens / output_tokens / cache_read.input_tokens /
                                     cache_creation.input_tokens, gen_ai.response.finish_reasons (stop, tool_calls,
                                     error or cancelled), error.type
    execute_tool <tool>    INTERNAL  gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type

`gen_ai.usage.input_tokens` counts every input token, the cached ones included (as the conventions say; the
`Usage` event keeps them apart); the cache counts are set only when not zero (each attribute costs its validation
and encoding). A failed turn or step has status ERROR. Spans are batched and exported over
OTLP/HTTP (protobuf) by the SDK's `BatchSpanProcessor` in its own thread; the standard `OTEL_BSP_*`,
`OTEL_EXPORTER_OTLP_*` (headers, timeout, compression, certificates), `OTEL_RESOURCE_ATTRIBUTES` and
`OTEL_TRACES_SAMPLER` variables apply. The daemon's provider is its own, not OpenTelemetry's global one.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TypeVar
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from app import __version__
from app.agents.base import ProviderError, ToolCall, Usage
from app.telemetry.seam import TurnTrace, enter_step, enter_turn, leave_step

__all__ = ["SHUTDOWN_WAIT_SECS", "OtelTracer"]

E = TypeVar("E")

SHUTDOWN_WAIT_SECS = 3.0  # the daemon's stop waits this long at most for the last export
_PROPAGATOR = TraceContextTextMapPropagator()


class OtelTracer:
    """The daemon's tracer: its own `TracerProvider` (never the global one, so two daemons in one process, as in
    tests, keep apart), a batch processor and the OTLP/HTTP exporter (`exporter` replaces it in tests)."""

    def __init__(self, *, endpoint: str | None, service_name: str, exporter: SpanExporter | None = None) -> None:
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        self._provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter(endpoint=endpoint)))
        self._tracer = self._provider.get_tracer("zeroclaw", __version__)

    def begin_turn(self, *, session_id: str, agent: str, turn_id: str) -> TurnTrace:
        span = self._tracer.start_span(
            f"invoke_agent {agent}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": session_id,
                "zeroclaw.turn.id": turn_id,
            },
        )
        turn = _Turn(self._tracer, span)
        enter_turn(turn)
        return turn

    def force_flush(self, timeout_secs: float = SHUTDOWN_WAIT_SECS) -> bool:
        return self._provider.force_flush(int(timeout_secs * 1000))

    async def shutdown(self) -> None:
        """Flush and stop in a daemon thread, waited for at most `SHUTDOWN_WAIT_SECS`: a collector that is down
        never holds the daemon's exit for the exporter's whole timeout."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not done.done():
                done.set_result(None)

        def run() -> None:
            try:
                self._provider.shutdown()
            finally:
                with suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                    loop.call_soon_threadsafe(settle)

        threading.Thread(target=run, name="zeroclaw-otel-shutdown", daemon=True).start()
        with suppress(TimeoutError):
            await asyncio.wait_for(done, SHUTDOWN_WAIT_SECS)


class _Turn:
    __slots__ = ("_cache_read", "_cache_write", "_context", "_input", "_output", "_span", "_tracer")

    def __init__(self, tracer: trace.Tracer, span: Span) -> None:
        self._tracer = tracer
        self._span = span
        self._context = trace.set_span_in_context(span)
        self._input = self._output = self._cache_read = self._cache_write = 0

    async def step(self, provider: object, events: AsyncIterator[E]) -> AsyncIterator[E]:
        name, attributes, remote = _describe(provider)
        span = self._tracer.start_span(name, context=self._context, kind=SpanKind.CLIENT, attributes=attributes)
        token = None
        if remote:  # a provider that speaks HTTP gets the span as its parent (the scripted one has no request)
            headers: dict[str, str] = {}
            _PROPAGATOR.inject(headers, context=trace.set_span_in_context(span))
            token = enter_step(headers)
        finish = "stop"
        usage: Usage | None = None
        try:
            async for event in events:
                if isinstance(event, Usage):
                    usage = event
                elif isinstance(event, ToolCall):
                    finish = "tool_calls"
                yield event
        except ProviderError as exc:
            finish = "error"
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.set_attribute("error.type", type(exc).__qualname__)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            finish = "cancelled"
            raise
        except Exception as exc:
            finish = "error"
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", type(exc).__qualname__)
            raise
        finally:
            if token is not None:
                leave_step(token)
            ended: dict[str, str | int | tuple[str, ...]] = {"gen_ai.response.finish_reasons": (finish,)}
            if usage is not None:
                ended.update(self._usage(usage))
            span.set_attributes(ended)  # one call: each attribute set on a live span is validated under a lock
            span.end()

    def _usage(self, usage: Usage) -> dict[str, str | int]:
        # The conventions count every input token in input_tokens, the cached ones too.
        total_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self._input += total_input
        self._output += usage.output_tokens
        self._cache_read += usage.cache_read_tokens
        self._cache_write += usage.cache_write_tokens
        return _usage_attributes(total_input, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)

    def tool(self, call: ToolCall) -> AbstractContextManager[object]:
        return self._tool(call)

    @contextmanager
    def _tool(self, call: ToolCall) -> Iterator[object]:
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        try:
            yield span
        except asyncio.CancelledError:
            span.set_attribute("error.type", "cancelled")
            raise
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR))
            raise
        finally:
            span.end()

    def end(self, stop_reason: str) -> None:
        span = self._span
        attributes = _usage_attributes(self._input, self._output, self._cache_read, self._cache_write)
        attributes["zeroclaw.turn.stop_reason"] = stop_reason
        span.set_attributes(attributes)
        if stop_reason == "failed":
            span.set_attribute("error.type", "failed")
            span.set_status(Status(StatusCode.ERROR, "the turn failed"))
        span.end()


def _usage_attributes(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }
    if cache_read:
        attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
    if cache_write:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = cache_write
    return attributes


_DESCRIBED: dict[tuple[str, object, object], tuple[str, dict[str, str | int], bool]] = {}


def _describe(provider: object) -> tuple[str, dict[str, str | int], bool]:
    """A provider step's span name, its attributes at start, and whether the provider speaks HTTP; cached per
    (kind, model, base_url), since a provider is built afresh for every turn."""
    kind = str(getattr(provider, "kind", "") or "unknown")
    model = getattr(provider, "model", None)
    base_url = getattr(provider, "base_url", None)
    key = (kind, model, base_url)
    if (found := _DESCRIBED.get(key)) is not None:
        return found
    attributes: dict[str, str | int] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": kind}
    if isinstance(model, str) and model:
        attributes["gen_ai.request.model"] = model
    remote = isinstance(base_url, str) and bool(base_url)
    if remote:
        try:
            parts = urlsplit(str(base_url))
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            pass
    found = (f"chat {model}" if isinstance(model, str) and model else "chat", attributes, remote)
    if len(_DESCRIBED) >= 64:  # a config edited many times: start over rather than grow
        _DESCRIBED.clear()
    _DESCRIBED[key] = found
    return found
