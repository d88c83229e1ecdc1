"""OpenTelemetry traces of turns (R-MODEL-6), end to end on a real daemon.

`Collector` is an OTLP/HTTP receiver in the test process (the standard library's HTTP server on 127.0.0.1) that
decodes each `POST /v1/traces` body as an `ExportTraceServiceRequest` with `opentelemetry-proto`; the same server
answers `POST /v1/chat/completions` as a tiny OpenAI-compatible provider and records the headers it was sent, so a
test sees the `traceparent` the daemon gave the provider next to the spans it exported.

The daemon exports with the SDK's batch processor; `OTEL_BSP_SCHEDULE_DELAY` shortens its wait so spans arrive
while the test waits. Without an endpoint the daemon imports no OpenTelemetry module at all: it runs with
`PYTHONPROFILEIMPORTTIME=1`, so CPython itself lists every module the real process imported (as in
test_e2e_startup.py).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from session_client import Peer, check_turn

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$")
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")  # flags: sampled, random (level 2)
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "50"}
# A daemon under test must not inherit a collector from the machine's environment.
NO_OTEL_ENV: dict[str, str | None] = {
    name: None
    for name in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_SDK_DISABLED",
        "OTEL_SERVICE_NAME",
        "OTEL_TRACES_SAMPLER",
    )
}
MODEL = "fake-traced-model"


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    status: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


class Collector:
    """OTLP/HTTP receiver (`/v1/traces`) and a streaming OpenAI-compatible provider (`/v1/chat/completions`)."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.provider_headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                encoding = (self.headers.get("content-encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path == "/v1/traces":
                    collector.received(body)
                    self.answer(200, "application/x-protobuf", ExportTraceServiceResponse().SerializeToString())
                elif self.path == "/v1/chat/completions":
                    with collector.lock:
                        collector.provider_headers.append({k.lower(): v for k, v in self.headers.items()})
                    self.answer(200, "text/event-stream", collector.completion())
                else:
                    self.answer(404, "text/plain", b"not here")

            def answer(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="otlp-collector", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def received(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        found: list[Span] = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        Span(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            status=span.status.code,
                            attributes=_attributes(span.attributes),
                            resource=resource,
                        )
                    )
        with self.lock:
            self.spans += found

    @staticmethod
    def completion() -> bytes:
        def sse(obj: Any) -> bytes:
            return f"data: {json.dumps(obj)}\n\n".encode()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": "c1", "object": "chat.completion.chunk", "model": MODEL, "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish}
            ]}  # fmt: skip

        usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        return b"".join(
            [
                sse(chunk({"role": "assistant", "content": "traced "})),
                sse(chunk({"content": "hello there"})),
                sse(chunk({}, "stop")),
                sse({"id": "c1", "object": "chat.completion.chunk", "model": MODEL, "choices": [], "usage": usage}),
                b"data: [DONE]\n\n",
            ]
        )

    def wait_spans(self, count: int, timeout: float = 10.0) -> list[Span]:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = list(self.spans)
            if len(spans) >= count:
                return spans
            assert time.monotonic() < deadline, f"{len(spans)} of {count} spans arrived: {spans}"
            time.sleep(0.02)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    try:
        yield c
    finally:
        c.close()


def modules(daemon: Daemon) -> set[str]:
    return {m.group(1) for line in list(daemon.stderr_lines) if (m := IMPORT_LINE.match(line))}


def one(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, spans)
    return found[0]


@pytest.mark.req("R-MODEL-6")
async def test_a_scripted_turn_with_a_tool_call_is_one_trace_of_genai_spans(
    daemon_factory: DaemonFactory, collector: Collector
) -> None:
    config = f"""
[telemetry]
otlp_endpoint = "{collector.url}"

[agents.default]
auto_approve = ["bash"]
"""
    daemon = daemon_factory.start(config, env={**NO_OTEL_ENV, **FAST_EXPORT})
    async with await Peer.open(daemon) as peer:
        sid = (await peer.new_session())["sessionId"]
        turn = await peer.prompt(sid, "/bash echo hi")
        result = check_turn(turn, sid)
    [tool_call] = turn.of_type("tool_call")

    spans = collector.wait_spans(4)
    assert len(spans) == 4, spans
    root = one(spans, "invoke_agent default")
    tool = one(spans, "execute_tool bash")
    # GenAI span names: "chat {gen_ai.request.model}", the scripted provider's model being "scripted".
    chats = [s for s in spans if s.name == "chat scripted"]
    chats.sort(key=lambda s: s.attributes["gen_ai.usage.input_tokens"])
    assert len(chats) == 2, spans
    first, second = chats

    # One trace: the turn is the root, the provider steps and the tool call its children.
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert root.parent_id == ""
    assert {s.parent_id for s in (first, second, tool)} == {root.span_id}
    assert root.resource["service.name"] == "zeroclaw"

    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "default"
    assert root.attributes["gen_ai.conversation.id"] == sid
    assert root.attributes["zeroclaw.turn.stop_reason"] == "end_turn"

    # The scripted provider counts words (R-MODEL-5): the prompt's 3 in, the call's arguments ("echo hi") out; the
    # second step reads the prompt and the tool's result and says the turn's whole answer.
    for chat in chats:
        assert chat.kind == 3  # SPAN_KIND_CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert first.attributes["gen_ai.usage.input_tokens"] == 3
    assert first.attributes["gen_ai.usage.output_tokens"] == 2
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert second.attributes["gen_ai.usage.input_tokens"] > 3
    assert second.attributes["gen_ai.usage.output_tokens"] == len(result["content"].split())
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert root.attributes[key] == first.attributes[key] + second.attributes[key], key

    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "bash"
    assert tool.attributes["gen_ai.tool.call.id"] == tool_call["toolCallId"]


@pytest.mark.req("R-MODEL-6")
async def test_a_failed_turn_ends_its_spans_with_an_error(daemon_factory: DaemonFactory, collector: Collector) -> None:
    config = f'[telemetry]\notlp_endpoint = "{collector.url}/v1/traces"\nservice_name = "zc-test"\n'
    daemon = daemon_factory.start(config, env={**NO_OTEL_ENV, **FAST_EXPORT})
    async with await Peer.open(daemon) as peer:
        sid = (await peer.new_session())["sessionId"]
        check_turn(await peer.prompt(sid, "/fail"), sid, stop="failed")
    spans = collector.wait_spans(2)
    root, chat = one(spans, "invoke_agent default"), one(spans, "chat scripted")
    assert chat.parent_id == root.span_id
    assert root.resource["service.name"] == "zc-test"
    assert root.attributes["zeroclaw.turn.stop_reason"] == "failed"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert chat.attributes["error.type"] == "ProviderError"
    assert root.status == chat.status == 2  # STATUS_CODE_ERROR


@pytest.mark.req("R-MODEL-6")
async def test_the_provider_gets_the_chat_spans_traceparent(
    daemon_factory: DaemonFactory, collector: Collector
) -> None:
    config = f"""
[providers.fake]
kind = "openai"
base_url = "{collector.url}/v1"
model = "{MODEL}"
api_key = "sk-test"

[agents.default]
provider = "fake"
"""
    # The standard variable alone turns traces on (no [telemetry] section).
    env = {**NO_OTEL_ENV, **FAST_EXPORT, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}
    daemon = daemon_factory.start(config, env=env)
    async with await Peer.open(daemon) as peer:
        sid = (await peer.new_session())["sessionId"]
        result = check_turn(await peer.prompt(sid, "hello"), sid)
    assert result["content"] == "traced hello there"

    spans = collector.wait_spans(2)
    chat = one(spans, f"chat {MODEL}")
    root = one(spans, "invoke_agent default")
    [headers] = collector.provider_headers
    match = TRACEPARENT.match(headers.get("traceparent", ""))
    assert match is not None, headers
    assert (match.group(1), match.group(2)) == (chat.trace_id, chat.span_id)
    assert chat.parent_id == root.span_id and chat.trace_id == root.trace_id
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == MODEL
    assert chat.attributes["server.address"] == "127.0.0.1"
    assert chat.attributes["server.port"] == collector.server.server_address[1]
    assert chat.attributes["gen_ai.usage.input_tokens"] == 11
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    assert root.attributes["gen_ai.usage.input_tokens"] == 11


@pytest.mark.req("R-MODEL-6")
async def test_without_an_endpoint_no_opentelemetry_module_is_imported(
    daemon_factory: DaemonFactory, collector: Collector
) -> None:
    """The extra is installed here (the dev set-up has it): with no endpoint the daemon, through a whole turn with
    a tool call and its stop, imports none of it; the same daemon with an endpoint does (the test can see it)."""
    config = '[agents.default]\nauto_approve = ["bash"]\n'
    for endpoint in (None, collector.url):
        env = {**NO_OTEL_ENV, **FAST_EXPORT, "PYTHONPROFILEIMPORTTIME": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        daemon = daemon_factory.start(config, env=env)
        async with await Peer.open(daemon) as peer:
            sid = (await peer.new_session())["sessionId"]
            check_turn(await peer.prompt(sid, "/bash echo hi"), sid)
        assert daemon.stop() == 0, daemon.describe()
        imported = modules(daemon)
        assert "msgspec" in imported, daemon.describe()  # the import lines are there at all
        traced = {m for m in imported if m.split(".")[0] == "opentelemetry" or m.startswith("google.protobuf")}
        if endpoint is None:
            assert traced == set(), sorted(traced)
        else:
            assert "opentelemetry.sdk.trace" in traced, daemon.describe()
    assert len(collector.wait_spans(4)) == 4  # the second daemon's turn, exported at its stop at the latest


@pytest.mark.req("R-MODEL-6")
async def test_a_collector_that_is_down_holds_up_neither_turns_nor_the_stop(daemon_factory: DaemonFactory) -> None:
    with socket.socket() as probe:  # a port nothing listens on: every export is refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    config = f'[telemetry]\notlp_endpoint = "{dead}"\n'
    daemon = daemon_factory.start(config, env={**NO_OTEL_ENV, **FAST_EXPORT})
    async with await Peer.open(daemon) as peer:
        sid = (await peer.new_session())["sessionId"]
        for n in range(3):
            started = time.monotonic()
            check_turn(await peer.prompt(sid, f"turn {n}"), sid)
            assert time.monotonic() - started < 2.0
    started = time.monotonic()
    assert daemon.stop() == 0, daemon.describe()
    assert time.monotonic() - started < 3.0 + 1.5, daemon.describe()  # SHUTDOWN_WAIT_SECS, then out


@pytest.mark.req("R-MODEL-6")
async def test_a_cancelled_turn_and_its_step_end_their_spans(
    daemon_factory: DaemonFactory, collector: Collector
) -> None:
    config = f'[telemetry]\notlp_endpoint = "{collector.url}"\n'
    daemon = daemon_factory.start(config, env={**NO_OTEL_ENV, **FAST_EXPORT})
    async with await Peer.open(daemon) as peer:
        sid = (await peer.new_session())["sessionId"]
        mark, fut = await peer.start_prompt(sid, "/sleep 5")
        await peer.wait_update("agent_message_chunk", session_id=sid, start=mark, timeout=5)
        await peer.call("session/cancel", {"sessionId": sid})
        turn = await peer.finish_turn(sid, mark, fut, timeout=5)
        assert turn.result["stopReason"] == "cancelled"
    spans = collector.wait_spans(2)
    root, chat = one(spans, "invoke_agent default"), one(spans, "chat scripted")
    assert chat.parent_id == root.span_id
    assert root.attributes["zeroclaw.turn.stop_reason"] == "cancelled"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("cancelled",)
    assert root.status != 2 and chat.status != 2  # a cancel is not an error
