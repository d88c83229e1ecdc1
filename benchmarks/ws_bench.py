"""`status` over the gateway's WebSocket vs over the Unix socket, on one daemon (the gateway issue's benchmark).

Both transports are driven by the same asyncio client shape (one connection, `--depth` requests in flight),
so the client's own cost is alike on both sides; the number that does not depend on the client at all is the
daemon's CPU time per request, read from /proc/<pid>/stat around each run.

    python benchmarks/ws_bench.py --duration 3 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import websockets

READY = re.compile(r"zeroclaw daemon ready: socket=(\S+) gateway=(\S+)")
STATUS = b'{"jsonrpc":"2.0","method":"status","id":%d}'


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def socket_client(path: str, token: str, depth: int, seconds: float) -> int:
    reader, writer = await asyncio.open_unix_connection(path, limit=1 << 24)
    writer.write(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}\n')
    await reader.readline()
    done, deadline = 0, time.perf_counter() + seconds
    writer.write(b"".join(STATUS % i + b"\n" for i in range(depth)))
    while time.perf_counter() < deadline:
        await reader.readline()
        done += 1
        writer.write(STATUS % done + b"\n")
    writer.close()
    return done


async def ws_client(url: str, token: str, depth: int, seconds: float) -> int:
    async with websockets.connect(url, max_size=1 << 24, compression=None) as ws:
        init = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1, "authToken": token}, "id": 0}
        await ws.send(json.dumps(init))
        await ws.recv()
        done, deadline = 0, time.perf_counter() + seconds
        for i in range(depth):
            await ws.send((STATUS % i).decode())
        while time.perf_counter() < deadline:
            await ws.recv()
            done += 1
            await ws.send((STATUS % done).decode())
    return done


def start_daemon(workdir: Path) -> tuple[subprocess.Popen[str], str, str]:
    (workdir / "config.toml").write_text(
        '[permission_profiles.bench]\nadmin = true\n[users.bench]\npermission_profiles = ["bench"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
    proc = subprocess.Popen(
        ["zeroclaw", "daemon", "--config-dir", str(workdir), "--gateway-port", "0", "--log-level", "warning"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = READY.search(proc.stderr.readline())
        if match:
            return proc, match[1], match[2].replace("http", "ws", 1) + "/rpc"
    proc.kill()
    raise SystemExit("the daemon did not become ready")


async def pair(path: str) -> str:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}\n')
    writer.write(b'{"jsonrpc":"2.0","method":"pairing/create","params":{"user":"bench"},"id":1}\n')
    await reader.readline()
    token: str = json.loads(await reader.readline())["result"]["token"]
    writer.close()
    return token


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--depth", type=int, nargs="+", default=[1, 64])
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zc-wsb-") as tmp:
        proc, sock, ws_url = start_daemon(Path(tmp))
        try:
            token = asyncio.run(pair(sock))
            rows: list[str] = []
            for depth in opts.depth:
                results: dict[str, list[tuple[float, float]]] = {"socket": [], "websocket": []}
                for _ in range(opts.repeat):
                    for name, client, target in (("socket", socket_client, sock), ("websocket", ws_client, ws_url)):
                        before = cpu_secs(proc.pid)
                        done = asyncio.run(client(target, token, depth, opts.duration))
                        used = cpu_secs(proc.pid) - before
                        results[name].append((done / opts.duration, used / max(done, 1) * 1e6))
                rate = {k: statistics.median(r for r, _ in v) for k, v in results.items()}
                cpu = {k: statistics.median(c for _, c in v) for k, v in results.items()}
                rows.append(
                    f"| {depth} | {rate['socket']:,.0f} | {rate['websocket']:,.0f} | "
                    f"{rate['websocket'] / rate['socket']:.2f}x | {cpu['socket']:.1f} | {cpu['websocket']:.1f} | "
                    f"{cpu['websocket'] / cpu['socket']:.2f}x |"
                )
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"`status`, one connection, medians of {opts.repeat} x {opts.duration:g} s, same asyncio client shape\n")
    print("| in flight | socket req/s | WebSocket req/s | WS/socket | daemon CPU µs/req socket | WS | WS/socket |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
