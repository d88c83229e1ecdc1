"""The soak kit's probe (benchmarks/soak.py): a light client in a process of its own, so that its latencies are the
daemon's and not the busy kit's. It calls `status` and `session/list` in turn, one at a time, on two Unix-socket
connections, `rate` times a second for `secs` seconds, and prints one JSON object: the latencies in seconds.

    python benchmarks/soak_probe.py SOCKET RATE SECS
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time

import orjson

CONNECTIONS = 2


async def probe(socket_path: str, rate: float, secs: float) -> list[float]:
    peers = [await asyncio.open_unix_connection(socket_path, limit=1 << 26) for _ in range(CONNECTIONS)]
    for reader, writer in peers:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        writer.write(orjson.dumps(init) + b"\n")
        if "result" not in orjson.loads(await reader.readline()):
            raise SystemExit("the probe could not initialize")
    latencies: list[float] = []
    end = time.perf_counter() + secs
    n = 0
    while time.perf_counter() < end:
        reader, writer = peers[n % CONNECTIONS]
        method = "status" if n % 2 == 0 else "session/list"
        started = time.perf_counter()
        writer.write(orjson.dumps({"jsonrpc": "2.0", "id": n + 1, "method": method, "params": {}}) + b"\n")
        answer = orjson.loads(await reader.readline())
        latencies.append(time.perf_counter() - started)
        if answer.get("id") != n + 1 or "result" not in answer:
            raise SystemExit(f"the probe got a wrong answer to {method}")
        n += 1
        await asyncio.sleep(max(0.0, started + 1 / rate - time.perf_counter()))
    for _, writer in peers:
        writer.close()
    return latencies


def main() -> None:
    gc.disable()  # a few thousand floats: its own collector must not add pauses to what it measures
    path, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    print(orjson.dumps(asyncio.run(probe(path, rate, secs))).decode())


if __name__ == "__main__":
    main()
