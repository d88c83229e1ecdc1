"""The daemon's CPU per scripted turn with OpenTelemetry traces off and on (R-MODEL-6, issue 39).

Each round starts one daemon per mode, in alternating order, on the same machine in one sitting:

* `off`: no endpoint (the default): nothing of OpenTelemetry is imported (checked: `PYTHONPROFILEIMPORTTIME`
  would show it; here `/proc/<pid>/maps` cannot, so the bench asks the tests for that proof instead);
* `on`: `[telemetry] otlp_endpoint` points at an OTLP/HTTP receiver in this process (the standard library's HTTP
  server, decoding every export with `opentelemetry-proto` to count the spans), with the SDK's batch processor at
  its defaults (an export every 5 s or 512 spans).

Per daemon: `session/new`, WARMUP turns, then TURNS measured `session/prompt`s over the Unix socket, one after the
other, of one workload: `text` (a plain prompt: one provider step), `tool` (`/read notes.txt`: a `read_file` call
between two steps) or `openai` (one step of the `openai` provider against a server in this process that streams a
short reply: the HTTP request the `traceparent` rides on). The CPU is the daemon's (/proc/<pid>/stat utime +
stime, every thread: the export thread and the storage writer too) from before the first measured turn to 1 s after
the last one; in `on` mode also not before the receiver has every span (up to the 5 s of the last batch: an idle
daemon's CPU over that wait is within the 10 ms tick).

    python benchmarks/otel_bench.py                   # 3 rounds x 300 turns, every workload
    python benchmarks/otel_bench.py --rounds 5 --turns 500 --workload tool

    text: off 2.41 ms/turn, on 2.48 ms/turn: +2.9 % (target ≤ +5 %; medians of 3 rounds)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak  # its lean client and CPU reader; it puts the e2e harness on the path
from e2e_harness import DaemonFactory
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TIMEOUT: Final = 30.0
WARMUP: Final = 20
SETTLE_SECS: Final = 1.0
PROMPTS: Final = {"text": "hello there, how are you today", "tool": "/read notes.txt", "openai": "hello there"}
SPANS_PER_TURN: Final = {"text": 2, "tool": 4, "openai": 2}  # invoke_agent + chat (+ execute_tool + chat)
# The `openai` workload's provider: this process's server streams this reply (four chunks, usage, [DONE]).
COMPLETION: Final = (
    b"".join(
        b"data: " + orjson.dumps(chunk) + b"\n\n"
        for chunk in [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello "}}]},
            {"choices": [{"index": 0, "delta": {"content": "from the "}}]},
            {"choices": [{"index": 0, "delta": {"content": "local server."}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}},
        ]
    )
    + b"data: [DONE]\n\n"
)
NO_OTEL_ENV: Final[dict[str, str | None]] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": None,
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None,
    "OTEL_SDK_DISABLED": None,
}


class Receiver:
    """OTLP/HTTP `/v1/traces`: counts the spans it is sent."""

    def __init__(self) -> None:
        self.spans = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path.endswith("/chat/completions"):
                    self.reply(200, "text/event-stream", COMPLETION)
                    return
                request = ExportTraceServiceRequest.FromString(body)
                count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
                with receiver.lock:
                    receiver.spans += count
                self.reply(200, "application/x-protobuf", ExportTraceServiceResponse().SerializeToString())

            def reply(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    async def wait_for(self, spans: int, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while self.spans < spans:
            if time.monotonic() > deadline:
                raise SystemExit(f"the receiver got {self.spans} of {spans} spans")
            await asyncio.sleep(0.05)


async def one_daemon(factory: DaemonFactory, receiver: Receiver, mode: str, workload: str, turns: int) -> float:
    """CPU ms per turn of one daemon."""
    config = '[agents.default]\ntools = ["read_file"]\n'
    if workload == "openai":
        config += f'provider = "local"\n\n[providers.local]\nkind = "openai"\nbase_url = "{receiver.url}/v1"\n'
        config += 'model = "m"\napi_key = "sk-bench"\n'
    env: dict[str, str | None] = {**NO_OTEL_ENV, "OTEL_BSP_SCHEDULE_DELAY": None}  # the SDK's 5 s batches
    if mode == "on":
        config += f'\n[telemetry]\notlp_endpoint = "{receiver.url}"\n'
    base = receiver.spans  # every span of an earlier daemon arrived before it stopped
    daemon = factory.start(config, env=env)
    try:
        client = await soak.open_socket(str(daemon.socket_path), TIMEOUT)
        try:
            opened, _ = await client.call("session/new", {}, TIMEOUT)
            sid = opened["sessionId"]
            prompt = PROMPTS[workload]
            for _ in range(WARMUP):
                await client.call("session/prompt", {"sessionId": sid, "prompt": prompt}, TIMEOUT)
            cpu0 = soak.cpu_secs(daemon.pid)
            for _ in range(turns):
                result, _ = await client.call("session/prompt", {"sessionId": sid, "prompt": prompt}, TIMEOUT)
                assert result["stopReason"] == "end_turn", result
            if mode == "on":
                expected = (WARMUP + turns) * SPANS_PER_TURN[workload]
                await receiver.wait_for(base + expected)
            await asyncio.sleep(SETTLE_SECS)
            cpu = soak.cpu_secs(daemon.pid) - cpu0
        finally:
            client.close()
    finally:
        daemon.stop()
    return 1000 * cpu / turns


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--workload", choices=[*PROMPTS, "all"], default="all")
    args = parser.parse_args()
    workloads = list(PROMPTS) if args.workload == "all" else [args.workload]
    receiver = Receiver()
    factory = DaemonFactory()
    try:
        for workload in workloads:
            cpu: dict[str, list[float]] = {"off": [], "on": []}
            for round_ in range(args.rounds):
                order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
                for mode in order:
                    cpu[mode].append(await one_daemon(factory, receiver, mode, workload, args.turns))
                print(
                    f"  {workload} round {round_ + 1}: " + ", ".join(f"{m} {cpu[m][-1]:.2f} ms/turn" for m in order),
                    flush=True,
                )
            off, on = statistics.median(cpu["off"]), statistics.median(cpu["on"])
            print(
                f"{workload}: off {off:.2f} ms/turn, on {on:.2f} ms/turn: {100 * (on / off - 1):+.1f} % "
                f"(target ≤ +5 %; medians of {args.rounds} rounds of {args.turns} turns)",
                flush=True,
            )
    finally:
        factory.close()
        receiver.server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
