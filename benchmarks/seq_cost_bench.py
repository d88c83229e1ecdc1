"""The cost of numbering updates (issue 30, R-MULTI-1): run.py's streaming row and scripted-turn row, two trees.

    python benchmarks/seq_cost_bench.py --before-tree DIR [--repeat 7] [--duration 3] [--stream-count 200000]
                                        [--quiet-wait 30]

DIR is a checkout of the tree before `seq` (e.g. `git worktree add --detach /tmp/zc-before 487fa44`, or
`git archive 487fa44 | tar -x -C DIR`); this tree is "after". Each runs as
`env PYTHONPATH=<tree> python -P -c 'from app.cli import main; …' daemon` (the same interpreter and venv; `-P`, or
`-c` would put the current directory, often this tree, before PYTHONPATH), started by
run.py's `start_server` with its storage config, a fresh data dir per process. Per repeat, both trees one after
the other (the order alternates between repeats), each on a fresh process:

* `status`, 1 conn, depth 1 (loadgen, `--duration` s);
* streamed `session/update`s: run.py's `stream_rate` (`/stream N`, one reader counting line ends), notif/s;
* run.py's storage set-up, then the scripted turn row: loadgen `session/prompt "hello there"` on one session,
  sequential, `--duration` s; then `status` again. The turn row is shown as req/s and, as run.py does, as a ratio
  to the mean of the two `status` runs.
* diagnostics: `--no-gc`, both daemons with `gc.set_threshold(0)` (no automatic cyclic collection);
  `--seq-block N`, the after tree's `app.sessions.live.updates.SEQ_BLOCK` set to N before start (seqs reserved in
  storage per write: one write, awaited by the turn, every N updates).
* the daemon's CPU (/proc/PID/stat, user + system, 10 ms ticks) per streamed notification and per turn: steadier
  than the rates when other work shares the VM.

Prints per-repeat values, medians, and after/before of the medians and the median of per-repeat after/before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as runner  # its loadgen, daemon start, stream reader and storage set-up

HERE = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def daemon_code(args: argparse.Namespace, tree: Path) -> str:
    """The daemon's `-c` program; the diagnostics only change module state before `main` runs."""
    pre = ["import gc, sys"]
    if args.no_gc:  # the cyclic GC never runs by itself (threshold 0 stays after the daemon's gc.enable())
        pre.append("gc.set_threshold(0)")
    if args.seq_block and tree != args.before_tree:  # seqs reserved per storage write (the before tree has none)
        pre.append(f"import app.sessions.live.updates as u; u.SEQ_BLOCK = {args.seq_block}")
    return "; ".join([*pre, "from app.cli import main", "sys.exit(main())"])


def options(tree: Path, args: argparse.Namespace) -> runner.Options:
    code = daemon_code(args, tree)
    return runner.Options(
        targets=["daemon"],
        duration=args.duration,
        warmup=0.5,
        repeat=1,
        conns=1,
        depth=1,
        big_size=0,
        stream_count=args.stream_count,
        daemon_cmd=["env", f"PYTHONPATH={tree}", sys.executable, "-P", "-c", code, "daemon", "--log-level", "warning"],
        pin=False,
        json_out=None,
        quiet_wait=0.0,
        storage=True,
    )


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rps(exe: Path, sock: str, duration: float, *extra: str) -> tuple[float, int]:
    """req/s over the window, and every request answered (warm-up included)."""
    args = ("--mode", "rps", "--conns", "1", "--depth", "1", "--duration", str(duration), "--warmup", "0.5")
    res = runner.loadgen(exe, None, sock, *args, *extra, budget=duration)
    if res.get("error_replies"):
        raise runner.BenchError(f"error replies: {res}")
    return float(res["rps"]), int(res["completed_total"])


def one(exe: Path, tree: Path, args: argparse.Namespace) -> dict[str, float]:
    opts = options(tree, args)
    server = runner.start_server("daemon", opts, None)
    try:
        pid = server.proc.pid
        out = {"status_before": rps(exe, server.socket, args.duration)[0]}
        cpu = cpu_secs(pid)
        out["stream_nps"] = runner.stream_rate(server.socket, "daemon", args.stream_count)
        out["stream_cpu_us_per_notif"] = (cpu_secs(pid) - cpu) * 1e6 / args.stream_count
        sids = runner.storage_setup(server.socket)
        params = json.dumps({"sessionId": sids["talker"], "prompt": "hello there"}, separators=(",", ":"))
        cpu = cpu_secs(pid)
        out["turn_rps"], turns = rps(
            exe, server.socket, args.duration, "--method", "session/prompt", "--params", params
        )
        out["turn_cpu_ms"] = (cpu_secs(pid) - cpu) * 1e3 / turns
        out["status_after"] = rps(exe, server.socket, args.duration)[0]
        out["turn_ratio"] = out["turn_rps"] / ((out["status_before"] + out["status_after"]) / 2)
        if server.proc.poll() is not None:
            raise runner.BenchError("the daemon exited during the run")
        return out
    finally:
        server.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before-tree", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--stream-count", type=int, default=200_000)
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="before each process, wait up to S s for the machine to be < 15 %% busy (it is shared)",
    )
    p.add_argument("--no-gc", action="store_true", help="diagnostic: both daemons without automatic cyclic GC")
    p.add_argument("--seq-block", type=int, help="diagnostic: the after tree's SEQ_BLOCK (default 4096)")
    args = p.parse_args()
    args.before_tree = args.before_tree.resolve()
    trees = {"before": args.before_tree, "after": HERE}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="zcs-build-") as build:
        exe = runner.compile_loadgen(Path(build))
        for r in range(args.repeat):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                busy = runner.wait_for_quiet(args.quiet_wait) if args.quiet_wait > 0 else runner.cpu_busy_fraction()
                runs[name].append(one(exe, trees[name], args) | {"busy_before": busy})
                print(
                    f"repeat {r + 1} {name}: " + json.dumps({k: round(v, 4) for k, v in runs[name][-1].items()}),
                    flush=True,
                )
    keys = (
        "stream_nps",
        "stream_cpu_us_per_notif",
        "turn_rps",
        "turn_ratio",
        "turn_cpu_ms",
        "status_before",
        "status_after",
    )
    med: dict[str, dict[str, Any]] = {
        n: {k: statistics.median(x[k] for x in rs) for k in keys} for n, rs in runs.items()
    }
    print(f"\nmedians of {args.repeat} (before = {trees['before']}, after = {trees['after']}):")
    for k in keys:
        per = [a[k] / b[k] for a, b in zip(runs["after"], runs["before"], strict=True)]
        print(
            f"  {k}: before {med['before'][k]:,.4g}  after {med['after'][k]:,.4g}  "
            f"after/before {med['after'][k] / med['before'][k]:.3f} (median per repeat {statistics.median(per):.3f}: "
            + " ".join(f"{x:.3f}" for x in per)
            + ")"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
