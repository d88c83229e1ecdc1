"""`session/attach` replay and an attached watcher's cost (issue 30, R-MULTI-2).

    python benchmarks/attach_bench.py [--replay-runs 9] [--whole-turn] [--pairs 15] [--stream 200000]
                                     [--quiet-wait 60] [--profile PREFIX]

A real `zeroclaw daemon` (this tree, or `--tree DIR`, selected by PYTHONPATH) in a temp config dir, NDJSON on its
Unix socket, raw sockets on the client side (a reader that only finds line ends in 1 MiB reads, far faster than
the daemon):

* **replay**: one connection runs a turn `/stream 10000` (10,000 `agent_message_chunk`s and a `turn_complete`,
  each numbered with `seq`), reading it all. Then, `--replay-runs` times, a new connection sends
  `session/attach {sessionId, afterSeq: last - 10000}`: the whole replay buffer (`[limits] replay_events`, default
  10,000), which is the turn's updates from its second chunk on; with `--whole-turn` the daemon keeps 10,001
  (`[limits] replay_events` in its config.toml) and `afterSeq` is the turn's first seq - 1: all 10,001.
  events/s = replayed / (attach written → its answer read). Every replayed frame is checked afterwards (count,
  seqs contiguous, the answer's `replayed`).
* **watcher**: `--pairs` pairs of the same turn `/stream N` on a new session each, timed from `session/prompt`
  written to its answer read, once with no watcher and once with one other connection attached (`session/attach
  {sessionId}` before the prompt) that reads every update in its own thread; the order within a pair alternates.
  Also the daemon's CPU per turn (/proc/<pid>/stat). Reports the medians and the median of the per-pair ratios.

`--profile PREFIX` runs each daemon under cProfile (the event loop's thread, into `PREFIX.replay` and
`PREFIX.watcher`; slower, for where the time goes, not for the numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

READY = re.compile(r"zeroclaw daemon ready: socket=(\S+) gateway=(\S+)")
HERE = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
MAIN = "import sys; from app.cli import main; sys.exit(main())"
PROFILED = (  # the main thread (the event loop) under cProfile, written when the daemon exits on SIGTERM
    "import sys, cProfile; from app.cli import main; p = cProfile.Profile(); p.enable()\n"
    "try: main()\nfinally: p.disable(); p.dump_stats(%r)"
)


def start(tree: Path, workdir: str, profile: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")} | {"PYTHONPATH": str(tree)}
    code = MAIN if profile is None else PROFILED % str(profile)
    argv = [sys.executable, "-P", "-c", code, "daemon"]  # -P: not the cwd's tree before PYTHONPATH
    argv += ["--config-dir", workdir, "--log-level", "warning", "--no-gateway"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = READY.search(raw.decode(errors="replace"))
        if m:
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()  # type: ignore[union-attr]
            return proc, m[1]
    raise RuntimeError(f"{tree}: the daemon exited before ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def wait_for_quiet(seconds: float) -> float:
    """run.py's: wait up to `seconds` for the CPUs to be < 15 % busy; the last busy fraction."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run

    return run.wait_for_quiet(seconds)


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Conn:
    """A blocking NDJSON client on a raw socket."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(120)
        self.sock.connect(path)
        self.pending = b""
        self.next_id = 0
        self.call("initialize", {"protocolVersion": 1})

    def send(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "method": method, "params": params, "id": self.next_id}
        self.sock.sendall(json.dumps(frame).encode() + b"\n")
        return self.next_id

    def read_until_answer(self, rid: int) -> tuple[list[bytes], dict[str, Any]]:
        """Every line up to the answer to `rid`, which is the last line of a read (nothing follows it here)."""
        chunks = [self.pending]
        tail = self.pending
        marker = b'"id":%d' % rid
        while True:
            if tail.endswith(b"\n"):
                start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
                if start == 0:  # a line longer than the tail (a long answer): look at all of it
                    whole = b"".join(chunks)
                    start = whole.rfind(b"\n", 0, len(whole) - 1) + 1
                    last = whole[start:]
                else:
                    last = tail[start:]
                if marker in last and (b'"result"' in last or b'"error"' in last):
                    break
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("closed")
            chunks.append(chunk)
            tail = tail[-4096:] + chunk if len(chunk) < 4096 else chunk
        self.pending = b""
        lines = b"".join(chunks).split(b"\n")[:-1]
        answer = json.loads(lines[-1])
        if "result" not in answer:
            raise RuntimeError(answer)
        return lines[:-1], answer["result"]

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.read_until_answer(self.send(method, params))[1]

    def close(self) -> None:
        self.sock.close()


def seqs(lines: list[bytes]) -> list[int]:
    return [json.loads(line)["params"]["seq"] for line in lines]


def replay(path: str, runs: int, count: int, whole_turn: bool) -> dict[str, Any]:
    prompter = Conn(path)
    sid = prompter.call("session/new", {})["sessionId"]
    updates, answer = prompter.read_until_answer(
        prompter.send("session/prompt", {"sessionId": sid, "prompt": f"/stream {count}"})
    )
    assert answer["stopReason"] == "end_turn", answer
    turn = seqs(updates)
    last = turn[-1]
    after = turn[0] - 1 if whole_turn else last - count  # the whole turn needs replay_events > count
    count = last - after
    rates, times = [], []
    for _ in range(runs):
        watcher = Conn(path)
        t = time.perf_counter()
        rid = watcher.send("session/attach", {"sessionId": sid, "afterSeq": after})
        lines, result = watcher.read_until_answer(rid)
        elapsed = time.perf_counter() - t
        watcher.close()
        got = seqs(lines)
        assert got == list(range(after + 1, last + 1)), (len(got), got[:3], got[-3:])
        assert result["replayed"] == len(got) == count and not result["gap"], result
        rates.append(len(got) / elapsed)
        times.append(elapsed * 1e3)
    prompter.close()
    return {
        "turn_updates": len(updates),
        "turn_seqs": [turn[0], last],
        "after_seq": after,
        "replayed": count,
        "events_per_s": rates,
        "ms": times,
        "median_events_per_s": statistics.median(rates),
        "median_ms": statistics.median(times),
    }


def reader(conn: Conn, expected: int, done: list[int]) -> None:
    """Read `expected` more lines (the turn's updates) from an attached connection."""
    lines = conn.pending.count(b"\n")
    while lines < expected:
        chunk = conn.sock.recv(1 << 20)
        if not chunk:
            break
        lines += chunk.count(b"\n")
    done.append(lines)


def one_turn(path: str, pid: int, count: int, watched: bool) -> tuple[float, float]:
    prompter = Conn(path)
    sid = prompter.call("session/new", {})["sessionId"]
    watcher, thread, done = None, None, list[int]()
    if watched:
        watcher = Conn(path)
        watcher.call("session/attach", {"sessionId": sid})
        thread = threading.Thread(target=reader, args=(watcher, count + 1, done))
        thread.start()
    cpu = cpu_secs(pid)
    t = time.perf_counter()
    rid = prompter.send("session/prompt", {"sessionId": sid, "prompt": f"/stream {count}"})
    lines, chunks = 0, []
    while True:  # the prompter reads like run.py's stream row: counting line ends, the answer last
        chunk = prompter.sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed")
        chunks.append(chunk)
        lines += chunk.count(b"\n")
        if lines >= count + 2:
            break
    elapsed = time.perf_counter() - t
    cpu = cpu_secs(pid) - cpu
    last = b"".join(chunks).rsplit(b"\n", 2)[-2]
    assert lines == count + 2 and last.startswith(b'{"jsonrpc":"2.0","id":%d,"result"' % rid), last[:100]
    if thread is not None and watcher is not None:
        thread.join(60)
        assert done and done[0] >= count + 1, done
        watcher.close()
    prompter.close()
    return elapsed * 1e3, cpu * 1e3


def watcher_cost(path: str, pid: int, pairs: int, count: int) -> dict[str, Any]:
    one_turn(path, pid, count, False)  # warm-up, both ways
    one_turn(path, pid, count, True)
    alone, watched, cpu_alone, cpu_watched, ratios = [], [], [], [], []
    for n in range(pairs):
        res: dict[bool, tuple[float, float]] = {}
        for w in (False, True) if n % 2 == 0 else (True, False):
            res[w] = one_turn(path, pid, count, w)
        alone.append(res[False][0])
        watched.append(res[True][0])
        cpu_alone.append(res[False][1])
        cpu_watched.append(res[True][1])
        ratios.append(res[True][0] / res[False][0])
    return {
        "stream": count,
        "alone_ms": alone,
        "watched_ms": watched,
        "median_alone_ms": statistics.median(alone),
        "median_watched_ms": statistics.median(watched),
        "median_ratio": statistics.median(ratios),
        "ratio_of_medians": statistics.median(watched) / statistics.median(alone),
        "median_cpu_alone_ms": statistics.median(cpu_alone),
        "median_cpu_watched_ms": statistics.median(cpu_watched),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", type=Path, default=HERE, help="the source tree to run (PYTHONPATH)")
    p.add_argument("--replay-runs", type=int, default=9)
    p.add_argument("--replay-count", type=int, default=10_000, help="events replayed (≤ [limits] replay_events)")
    p.add_argument(
        "--whole-turn",
        action="store_true",
        help="`[limits] replay_events` = count + 1 and `afterSeq` = the turn's first seq - 1: the whole turn",
    )
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument("--stream", type=int, default=200_000, help="N of the watched turn `/stream N`")
    p.add_argument("--only", choices=("replay", "watcher"))
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="before each part, wait up to S s for the machine to be < 15 %% busy (it is shared)",
    )
    p.add_argument("--profile", help="cProfile each daemon into PREFIX.replay / PREFIX.watcher")
    args = p.parse_args()
    out: dict[str, Any] = {}
    if args.only != "watcher":
        out["busy_before_replay"] = wait_for_quiet(args.quiet_wait)
        workdir = tempfile.mkdtemp(prefix="zca-")
        if args.whole_turn:  # keep the turn's chunks and its turn_complete
            Path(workdir, "config.toml").write_text(f"[limits]\nreplay_events = {args.replay_count + 1}\n")
        proc, path = start(args.tree, workdir, args.profile and args.profile + ".replay")
        try:
            out["replay"] = replay(path, args.replay_runs, args.replay_count, args.whole_turn)
        finally:
            stop(proc)
            shutil.rmtree(workdir, ignore_errors=True)
        r = out["replay"]
        print(
            f"replay of {r['replayed']}: median {r['median_events_per_s']:,.0f} events/s ({r['median_ms']:.1f} ms), "
            f"per run {' '.join(f'{x:,.0f}' for x in r['events_per_s'])} (target ≥ 100,000/s)",
            flush=True,
        )
    if args.only != "replay":
        out["busy_before_watcher"] = wait_for_quiet(args.quiet_wait)
        workdir = tempfile.mkdtemp(prefix="zca-")
        proc, path = start(args.tree, workdir, args.profile and args.profile + ".watcher")
        try:
            out["watcher"] = watcher_cost(path, proc.pid, args.pairs, args.stream)
        finally:
            stop(proc)
            shutil.rmtree(workdir, ignore_errors=True)
        w = out["watcher"]
        print(
            f"/stream {w['stream']}: alone {w['median_alone_ms']:.1f} ms (cpu {w['median_cpu_alone_ms']:.0f}), "
            f"watched {w['median_watched_ms']:.1f} ms (cpu {w['median_cpu_watched_ms']:.0f}), "
            f"median per-pair ratio {w['median_ratio']:.3f} (ratio of medians {w['ratio_of_medians']:.3f}; "
            f"target ≤ 1.10)",
            flush=True,
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
