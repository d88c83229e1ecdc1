"""`rpc.discover` and start-up (issue 32): the document is built on first use, so start-up is unchanged, and
later calls are answered from the encoded bytes.

    python benchmarks/discover_bench.py [--starts 15] [--calls 2000] [--before-tree DIR]

* exec → ready on an existing data dir, gateway off and on: the median of `--starts` starts, alternating with
  the tree given by `--before-tree` (a checkout of the previous release; PYTHONPATH selects the tree);
* `rpc.discover` on the socket: the first call (it builds the document), then the median and p99 of `--calls`
  sequential calls; `GET /openrpc.json` likewise, once the document is built.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

READY = re.compile(r"zeroclaw daemon ready: socket=(\S+) gateway=(\S+)")
HERE = Path(__file__).resolve().parents[1]


def start(tree: Path, workdir: str, gateway: bool) -> tuple[subprocess.Popen[bytes], float, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")} | {"PYTHONPATH": str(tree)}
    argv = [
        sys.executable,
        "-c",
        "import sys; from app.cli import main; sys.exit(main())",
        "daemon",
        "--config-dir",
        workdir,
        "--log-level",
        "warning",
    ]
    argv += ["--gateway-port", "0"] if gateway else ["--no-gateway"]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = READY.search(raw.decode(errors="replace"))
        if m:
            return proc, (time.perf_counter() - started) * 1e3, m[1], m[2]
    raise RuntimeError(f"{tree}: the daemon exited before ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


def startups(trees: dict[str, Path], starts: int) -> dict[str, dict[str, float]]:
    dirs = {name: tempfile.mkdtemp(prefix=f"zcd-{name[:1]}-") for name in trees}
    samples: dict[str, dict[str, list[float]]] = {name: {"off": [], "on": []} for name in trees}
    try:
        for name, tree in trees.items():
            stop(start(tree, dirs[name], False)[0])  # the data dir exists from here on
        for gateway in (False, True):
            for _ in range(starts):
                for name, tree in trees.items():
                    proc, ms, _, _ = start(tree, dirs[name], gateway)
                    samples[name]["on" if gateway else "off"].append(ms)
                    stop(proc)
    finally:
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    return {name: {k: statistics.median(v) for k, v in rows.items()} for name, rows in samples.items()}


async def discover_calls(socket: str, calls: int) -> dict[str, float]:
    reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 24)

    sizes = []

    async def one(rid: int) -> float:
        t = time.perf_counter()
        writer.write(b'{"jsonrpc":"2.0","method":"rpc.discover","id":%d}\n' % rid)
        line = await reader.readline()
        elapsed = (time.perf_counter() - t) * 1e3
        assert b'"openrpc":"1.3.2"' in line, line[:200]
        sizes.append(len(line))
        return elapsed

    first = await one(0)
    times = sorted([await one(i + 1) for i in range(calls)])
    writer.close()
    return {
        "first_ms": first,
        "p50_ms": statistics.median(times),
        "p99_ms": times[int(len(times) * 0.99) - 1],
        "bytes": sizes[-1],
    }


def http_calls(gateway: str, calls: int) -> dict[str, float]:
    times = []
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    for _ in range(calls):
        t = time.perf_counter()
        with opener.open(gateway + "/openrpc.json") as answer:
            body = answer.read()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return {"p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1], "bytes": len(body)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--starts", type=int, default=15)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--before-tree", type=Path, help="the previous release's checkout, for the start-up rows")
    args = p.parse_args()
    trees = {"after": HERE} | ({"before": args.before_tree} if args.before_tree else {})
    result: dict[str, object] = {"startup_ms": startups(trees, args.starts)}
    workdir = tempfile.mkdtemp(prefix="zcd-x-")
    proc, _, socket, gateway = start(HERE, workdir, True)
    try:
        result["rpc.discover"] = asyncio.run(discover_calls(socket, args.calls))
        result["GET /openrpc.json"] = http_calls(gateway, min(args.calls, 500))
    finally:
        stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
