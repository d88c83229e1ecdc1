"""The ecosystem routes' cost (issue 43): a `/stream N` turn through `POST /v1/chat/completions` (streamed) vs
through `session/prompt` on the WebSocket `/rpc`, as the daemon's CPU per chunk; and the SSE replay of a session's
retained updates (`GET /api/sessions/{id}/events` with `Last-Event-ID: 0`) in events per second.

    python benchmarks/eco_bench.py --chunks 5000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import httpx
import websockets
from ws_bench import cpu_secs, pair, start_daemon

T = TypeVar("T")


async def ws_turn(url: str, token: str, chunks: int, then: Callable[[str], Awaitable[T]] | None = None) -> T | None:
    """A `/stream chunks` turn on a new chat session over `/rpc`; then `then(session id)` while it is still live."""
    async with websockets.connect(url, max_size=1 << 24, compression=None) as ws:
        init = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1, "authToken": token}, "id": 0}
        await ws.send(json.dumps(init))
        await ws.recv()
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "session/new", "params": {"mode": "chat"}, "id": 1}))
        sid = json.loads(await ws.recv())["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": f"/stream {chunks}"}
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "session/prompt", "params": prompt, "id": 2}))
        while '"id":2' not in (await ws.recv()):
            pass
        return None if then is None else await then(sid)


async def openai_turn(http: httpx.AsyncClient, token: str, chunks: int) -> None:
    body = {"model": "zeroclaw/default", "messages": [{"role": "user", "content": f"/stream {chunks}"}], "stream": True}
    headers = {"Authorization": f"Bearer {token}"}
    async with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
        async for _ in response.aiter_raw():
            pass


async def sse_replay(http: httpx.AsyncClient, token: str, sid: str) -> tuple[float, int]:
    """The replay of a live session's retained updates: (seconds, events)."""
    headers = {"Authorization": f"Bearer {token}", "Last-Event-ID": "0"}
    start = time.perf_counter()
    events = 0
    async with http.stream("GET", f"/api/sessions/{sid}/events", headers=headers) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                events += 1
            if '"turn_complete"' in line:
                break
    return time.perf_counter() - start, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--replay", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zc-eco-") as tmp:
        proc, sock, ws_url = start_daemon(Path(tmp))
        base = ws_url.replace("ws", "http", 1).removesuffix("/rpc")
        try:
            token = asyncio.run(pair(sock))

            async def run() -> tuple[dict[str, list[float]], list[float]]:
                cpu: dict[str, list[float]] = {"websocket": [], "openai": []}
                rates = []
                async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=120) as http:
                    for _ in range(opts.repeat):
                        for name in ("websocket", "openai"):
                            before = cpu_secs(proc.pid)
                            if name == "websocket":
                                await ws_turn(ws_url, token, opts.chunks)
                            else:
                                await openai_turn(http, token, opts.chunks)
                            cpu[name].append((cpu_secs(proc.pid) - before) / opts.chunks * 1e6)
                        replayed = await ws_turn(ws_url, token, opts.replay - 2, partial(sse_replay, http, token))
                        assert replayed is not None
                        secs, events = replayed
                        rates.append(events / secs)
                return cpu, rates

            cpu, rates = asyncio.run(run())
        finally:
            proc.terminate()
            proc.wait(10)
    ws, oa = statistics.median(cpu["websocket"]), statistics.median(cpu["openai"])
    print(f"/stream {opts.chunks}, medians of {opts.repeat}")
    print(f"daemon CPU µs/chunk: WebSocket session/prompt {ws:.1f}, /v1/chat/completions {oa:.1f} ({oa / ws:.2f}x)")
    print(f"SSE replay of {opts.replay} events: {statistics.median(rates):,.0f} events/s (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
