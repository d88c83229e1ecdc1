"""The trace seam (R-MODEL-6, app/telemetry): when it turns on, what the no-op costs, a missing extra, and the
OpenTelemetry tracer's spans for one turn (exported to the SDK's in-memory exporter)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.agents.base import ProviderError, TextDelta, ToolCall, Usage
from app.config.schema import Telemetry, convert
from app.telemetry import NOOP_TRACER, NOOP_TURN, current_turn, endpoint_of, start_tracing, trace_headers
from app.telemetry.otel import OtelTracer

pytestmark = pytest.mark.req("R-MODEL-6")


@pytest.mark.parametrize(
    ("configured", "env", "expected"),
    [
        (None, {}, None),
        ("http://collector:4318", {}, "http://collector:4318/v1/traces"),
        ("http://collector:4318/", {}, "http://collector:4318/v1/traces"),
        ("https://c.example/otlp/v1/traces", {}, "https://c.example/otlp/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}, "http://env:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:4318/custom"}, "http://env:4318/custom"),
        ("http://cfg:4318", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}, "http://cfg:4318/v1/traces"),
        ("http://cfg:4318", {"OTEL_SDK_DISABLED": "true"}, None),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, None),
    ],
)
def test_the_endpoint_comes_from_the_config_then_the_standard_variables(
    configured: str | None, env: dict[str, str], expected: str | None
) -> None:
    assert endpoint_of(Telemetry(otlp_endpoint=configured), env) == expected


def test_an_endpoint_that_is_not_http_is_refused_by_the_config() -> None:
    with pytest.raises(Exception, match="otlp_endpoint"):
        convert({"telemetry": {"otlp_endpoint": "grpc://collector:4317"}})


def test_off_is_the_shared_no_op_and_imports_nothing() -> None:
    assert start_tracing(Telemetry(), {}) is NOOP_TRACER
    assert current_turn() is NOOP_TURN and trace_headers() == {}
    code = (
        "import sys\n"
        "from app.config.schema import Telemetry\n"
        "from app.telemetry import start_tracing, NOOP_TRACER\n"
        "import app.daemon, app.sessions.live.turn, app.agents.providers.http\n"
        "assert start_tracing(Telemetry(), {}) is NOOP_TRACER\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'google.protobuf')))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_no_op_turn_passes_the_provider_stream_through_unchanged() -> None:
    async def events() -> AsyncIterator[int]:
        yield 1

    stream = events()
    assert NOOP_TURN.step(object(), stream) is stream
    with NOOP_TURN.tool(ToolCall("tc_1", "bash", {})):
        pass
    NOOP_TURN.end("end_turn")
    assert NOOP_TRACER.begin_turn(session_id="s", agent="a", turn_id="t") is NOOP_TURN


def test_an_endpoint_without_the_extra_is_one_warning_and_no_traces(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delitem(sys.modules, "app.telemetry.otel", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # importing it raises ModuleNotFoundError, as if absent
    with caplog.at_level(logging.WARNING, "zeroclaw.telemetry"):
        tracer = start_tracing(Telemetry(otlp_endpoint="http://127.0.0.1:4318"), {})
    assert tracer is NOOP_TRACER
    assert "pip install 'zeroclaw[otel]'" in caplog.text


class _Provider:
    kind = "openai"
    model = "m-1"
    base_url = "https://api.example.com/v1"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen_headers: list[dict[str, str]] = []

    async def stream(self) -> AsyncIterator[object]:
        self.seen_headers.append(dict(trace_headers()))
        yield TextDelta("hi")
        if self.fail:
            raise ProviderError("boom")
        yield ToolCall("tc_1", "bash", {"command": "true"})
        yield Usage(input_tokens=10, output_tokens=4, cache_read_tokens=5, cache_write_tokens=1)


async def test_one_turn_is_an_invoke_agent_span_over_chat_and_execute_tool_spans() -> None:
    exporter = InMemorySpanExporter()
    tracer = OtelTracer(endpoint=None, service_name="unit", exporter=exporter)

    async def turn() -> None:
        trace = tracer.begin_turn(session_id="s_1", agent="coder", turn_id="t_1")
        assert current_turn() is trace
        provider = _Provider()
        async for _ in trace.step(provider, provider.stream()):
            pass
        assert trace_headers() == {}, "the traceparent is the step's only"
        with trace.tool(ToolCall("tc_1", "bash", {})):
            await asyncio.sleep(0)
        failing = _Provider(fail=True)
        with pytest.raises(ProviderError):
            async for _ in trace.step(failing, failing.stream()):
                pass
        trace.end("failed")
        assert provider.seen_headers[0]["traceparent"].startswith("00-")

    await asyncio.get_running_loop().create_task(turn())  # its own context, as a turn's task
    assert current_turn() is NOOP_TURN
    assert tracer.force_flush()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert (
        set(spans) == {"invoke_agent coder", "chat m-1", "execute_tool bash"}
        and len(exporter.get_finished_spans()) == 4
    )
    root = spans["invoke_agent coder"]
    chats = [s for s in exporter.get_finished_spans() if s.name == "chat m-1"]
    ok, failed = chats
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id for s in [*chats, spans["execute_tool bash"]]
    )
    assert ok.attributes is not None and failed.attributes is not None and root.attributes is not None
    assert ok.attributes["gen_ai.usage.input_tokens"] == 16  # the cached tokens count as input too
    assert ok.attributes["gen_ai.usage.cache_read.input_tokens"] == 5
    assert ok.attributes["gen_ai.usage.output_tokens"] == 4
    assert ok.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert ok.attributes["server.address"] == "api.example.com" and ok.attributes["server.port"] == 443
    assert failed.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert failed.attributes["error.type"] == "ProviderError"
    assert root.attributes["gen_ai.conversation.id"] == "s_1"
    assert root.attributes["zeroclaw.turn.id"] == "t_1"
    assert root.attributes["zeroclaw.turn.stop_reason"] == "failed"
    assert root.attributes["gen_ai.usage.input_tokens"] == 16
    assert root.resource.attributes["service.name"] == "unit"
    await tracer.shutdown()
