"""Idle RSS of the daemon with 50,000 stored sessions against none (issue 30: at most 1.5x, no whole table in memory).

    python benchmarks/idle_rss_bench.py [--sessions 50000] [--repeat 5] [--tree DIR]

Two data dirs, each made by a daemon that then stops: one left empty, one filled with `--sessions` sessions by
plain SQL (`session_list_bench.seed`: distinct activity times, titles on most, a few killed, a fifth of them chat
sessions). Then `--repeat` times, alternating between the two dirs, a fresh daemon (this tree, or `--tree`, by
PYTHONPATH) starts on it and, over its socket: `initialize` + one `status`, 0.3 s, VmRSS (/proc/PID/status);
one `session/list {limit:50}`, 0.3 s, VmRSS again. Medians and the ratios 50,000 / none.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import session_list_bench as slb  # its seeding, start/stop, VmRSS reader and client

READY = slb.READY


def start(tree: Path, workdir: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")} | {"PYTHONPATH": str(tree)}
    argv = [sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())", "daemon"]
    argv += ["--config-dir", workdir, "--log-level", "warning", "--no-gateway"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = READY.search(raw.decode(errors="replace"))
        if m:
            return proc, m[1]
    raise RuntimeError("the daemon exited before ready")


async def probe(socket: str, pid: int) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 26)
    client = slb.Client(reader, writer)
    await client.call("initialize", {"protocolVersion": 1})
    await client.call("status", {})
    await asyncio.sleep(0.3)
    after_status = slb.rss_mib(pid)
    page = await client.call("session/list", {"limit": 50})
    await asyncio.sleep(0.3)
    after_list = slb.rss_mib(pid)
    writer.close()
    return {"status_mib": after_status, "list_mib": after_list, "listed": len(page["sessions"])}


def measure(tree: Path, workdir: str) -> dict[str, Any]:
    proc, socket = start(tree, workdir)
    try:
        return asyncio.run(probe(socket, proc.pid))
    finally:
        slb.stop(proc)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--tree", type=Path, default=slb.HERE)
    args = p.parse_args()
    dirs = {0: tempfile.mkdtemp(prefix="zcr-0-"), args.sessions: tempfile.mkdtemp(prefix="zcr-n-")}
    try:
        for count, workdir in dirs.items():
            slb.stop(start(args.tree, workdir)[0])
            t = time.perf_counter()
            slb.seed(next(Path(workdir).rglob("zeroclaw.db")), count)
            print(f"seeded {count} sessions in {time.perf_counter() - t:.2f} s", flush=True)
        runs: dict[int, list[dict[str, Any]]] = {count: [] for count in dirs}
        for r in range(args.repeat):
            for count in list(dirs) if r % 2 == 0 else list(dirs)[::-1]:
                runs[count].append(measure(args.tree, dirs[count]))
                print(f"  {count} sessions: {json.dumps(runs[count][-1])}", flush=True)
    finally:
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    med = {c: {k: statistics.median(r[k] for r in rs) for k in ("status_mib", "list_mib")} for c, rs in runs.items()}
    none, many = med[0], med[args.sessions]
    for key, label in (("status_mib", "after start + `status`"), ("list_mib", "after `session/list {limit:50}`")):
        print(
            f"idle RSS {label}: none {none[key]:.1f} MiB, {args.sessions:,} {many[key]:.1f} MiB, "
            f"ratio {many[key] / none[key]:.2f}x (target ≤ 1.5x; medians of {args.repeat})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
