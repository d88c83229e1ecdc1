"""The ACP dialect's costs (issue 31): a streamed turn per update, ACP vs native, and `zeroclaw acp`'s start.

1. One daemon (`--no-gateway`, scripted provider). Per round, the same scripted turn `/stream N` is run on a
   native connection and on an ACP one (the bridge's marker, straight on the socket: the dialect's cost alone), in
   alternating order; the time from the prompt to its answer, over N, is the cost per update. A third client runs
   the turn through `zeroclaw acp` (stdio bridge, for information). Medians over `--repeat` rounds, and the
   median of the per-round ratios (both turns of a round see the same machine state).
2. With that daemon running: exec of `zeroclaw acp` until its `initialize` answer is on stdout, vs the whole of
   `zeroclaw status`, alternating, median of `--starts` each.

    python benchmarks/acp_bench.py [--count 200000] [--repeat 5] [--starts 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

READ = 1024 * 1024


def zeroclaw() -> list[str]:
    exe = shutil.which("zeroclaw")
    return [exe] if exe else [sys.executable, "-m", "app.cli"]


def start_daemon(config_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    (config_dir / "config.toml").write_text("[limits]\nmax_prompt_chars = 4000000\n")
    proc = subprocess.Popen(
        [*zeroclaw(), "daemon", "--config-dir", str(config_dir), "--no-gateway"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    for raw in proc.stderr:
        if raw.startswith(b"zeroclaw daemon ready:"):
            return proc
    raise RuntimeError("the daemon did not start")


class Lines:
    """NDJSON over a stream: counts lines until the answer with `rid`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.rest = reader, writer, b""

    async def call(self, rid: int, method: str, params: Any) -> tuple[dict[str, Any], int]:
        frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.writer.write(json.dumps(frame).encode() + b"\n")
        await self.writer.drain()
        marker = f'"id":{rid},'.encode()
        seen = 0
        while True:
            data = await self.reader.read(READ)
            if not data:
                raise RuntimeError("closed")
            lines = (self.rest + data).split(b"\n")
            self.rest = lines.pop()
            seen += len(lines)
            for line in lines:
                if marker in line and b'"method"' not in line[:40]:
                    return json.loads(line), seen


async def socket_turn(socket: str, acp: bool, count: int, cwd: str) -> float:
    reader, writer = await asyncio.open_unix_connection(socket, limit=64 * READ)
    c = Lines(reader, writer)
    try:
        if acp:
            init = {"protocolVersion": 1, "clientCapabilities": {}, "_meta": {"zeroclaw.acp": {}}}
            await c.call(1, "initialize", init)
            sid = (await c.call(2, "session/new", {"cwd": cwd, "mcpServers": []}))[0]["result"]["sessionId"]
            params: dict[str, Any] = {"sessionId": sid, "prompt": [{"type": "text", "text": f"/stream {count}"}]}
        else:
            await c.call(1, "initialize", {"protocolVersion": 1})
            sid = (await c.call(2, "session/new", {}))[0]["result"]["sessionId"]
            params = {"sessionId": sid, "prompt": f"/stream {count}"}
        began = time.perf_counter()
        answer, seen = await c.call(3, "session/prompt", params)
        elapsed = time.perf_counter() - began
        assert "result" in answer and seen >= count, (answer, seen)
        return elapsed / count
    finally:
        writer.close()


async def bridge_turn(config_dir: Path, env: dict[str, str], count: int, cwd: str) -> float:
    proc = await asyncio.create_subprocess_exec(
        *zeroclaw(), "acp", "--config-dir", str(config_dir), env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * READ,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    c = Lines(proc.stdout, proc.stdin)  # type: ignore[arg-type]
    await c.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    sid = (await c.call(2, "session/new", {"cwd": cwd, "mcpServers": []}))[0]["result"]["sessionId"]
    began = time.perf_counter()
    await c.call(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"/stream {count}"}]})
    elapsed = time.perf_counter() - began
    proc.stdin.close()
    await proc.wait()
    return elapsed / count


def acp_start(config_dir: Path, env: dict[str, str]) -> float:
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
    began = time.perf_counter()
    proc = subprocess.Popen(
        [*zeroclaw(), "acp", "--config-dir", str(config_dir)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(init)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - began
    assert b'"protocolVersion":1' in line, line
    proc.stdin.close()
    proc.wait()
    return elapsed


def status_time(config_dir: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([*zeroclaw(), "status", "--config-dir", str(config_dir)], env=env, check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=200_000, help="updates in the streamed turn")
    p.add_argument("--repeat", type=int, default=5, help="rounds of the streaming comparison")
    p.add_argument("--starts", type=int, default=15, help="runs of each start-up measurement")
    a = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="zc-acp-bench-", dir="/tmp"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}, "HOME": str(root)}
    config_dir = root / "cfg"
    config_dir.mkdir(mode=0o700)
    cwd = str(root)
    daemon = start_daemon(config_dir, env)
    socket = str(config_dir / "data" / "daemon.sock")
    try:
        native: list[float] = []
        acp: list[float] = []
        bridged: list[float] = []
        for i in range(a.repeat):
            order = [False, True] if i % 2 == 0 else [True, False]
            for use_acp in order:
                cost = asyncio.run(socket_turn(socket, use_acp, a.count, cwd))
                (acp if use_acp else native).append(cost)
            bridged.append(asyncio.run(bridge_turn(config_dir, env, a.count, cwd)))
        starts: list[float] = []
        statuses: list[float] = []
        for _ in range(a.starts):
            starts.append(acp_start(config_dir, env))
            statuses.append(status_time(config_dir, env))
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(root, ignore_errors=True)
    n, c, b = statistics.median(native), statistics.median(acp), statistics.median(bridged)
    paired = statistics.median(x / y for x, y in zip(acp, native, strict=True))  # same round, same machine state
    s, t = statistics.median(starts), statistics.median(statuses)
    print(f"| streamed turn, per update ({a.count} updates, median of {a.repeat}) | native {n * 1e9:.0f} ns | "
          f"ACP {c * 1e9:.0f} ns | {c / n:.2f}x (paired per round {paired:.2f}x) | ≤ 1.25x |")  # fmt: skip
    print(f"| same turn through `zeroclaw acp` (stdio) | | {b * 1e9:.0f} ns | {b / n:.2f}x | (information) |")
    print(f"| `zeroclaw acp` exec → initialize answer vs `zeroclaw status` (median of {a.starts}) | "
          f"status {t * 1e3:.0f} ms | acp {s * 1e3:.0f} ms | {s / t:.2f}x | ≤ 2x |")  # fmt: skip
    print("per round, native ns:", " ".join(f"{x * 1e9:.0f}" for x in native))
    print("per round, ACP ns:   ", " ".join(f"{x * 1e9:.0f}" for x in acp))


if __name__ == "__main__":
    main()
