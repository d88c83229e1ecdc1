"""Side-by-side benchmark: the real ``zeroclaw daemon`` against the best-possible Python floor server.

For each target (fresh process per repeat) it measures exec-to-readiness, idle RSS, RSS per idle initialized
connection, sequential / pipelined / 1000-connection ``status`` throughput and latency, one 7 MiB frame round
trip and (where supported) notification streaming, then prints medians and daemon/floor ratios as Markdown.

    python benchmarks/run.py                  # both targets, 3 repeats, 3 s per throughput scenario
    python benchmarks/run.py --only floor     # the floor alone (no daemon needed)
    python benchmarks/run.py --json out.json  # also write every raw number

Load comes from ``benchmarks/loadgen.c`` (compiled here with ``gcc -O2``). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rlimits import raise_nofile

HERE: Final = Path(__file__).resolve().parent
FLOOR_SCRIPT: Final = HERE / "floor_server.py"
LOADGEN_SRC: Final = HERE / "loadgen.c"
READY_TIMEOUT_S: Final = 30.0
IO_TIMEOUT_S: Final = 10.0  # loadgen's bound for connect/initialize, one big frame, draining
DAEMON_READY_RE: Final = re.compile(r"zeroclaw daemon ready: socket=(\S+)")
# The daemon must not pick up a socket or config from the caller's environment.
SCRUBBED_ENV: Final = ("ZEROCLAW_SOCKET", "ZEROCLAW_CONFIG_DIR", "ZEROCLAW_DATA_DIR")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    better: str  # "higher" or "lower"
    digits: int = 0


METRICS: Final = (
    Metric("ready_ms", "exec → ready, new data dir", "ms", "lower", 1),
    Metric("ready_warm_ms", "exec → ready, existing data dir", "ms", "lower", 1),
    Metric("ready_warm_gw_ms", "exec → ready, existing data dir, gateway on", "ms", "lower", 1),
    Metric("idle_rss_mib", "idle RSS", "MiB", "lower", 1),
    Metric("rss_per_conn_kib", "RSS per idle initialized connection", "KiB", "lower", 2),
    Metric("seq_rps", "`status`, 1 conn, depth 1", "req/s", "higher"),
    Metric("seq_p50_us", "  ↳ p50 latency", "µs", "lower", 1),
    Metric("seq_p99_us", "  ↳ p99 latency", "µs", "lower", 1),
    Metric("pipe_rps", "`status`, 1 conn, 64 in flight", "req/s", "higher"),
    Metric("pipe_p50_us", "  ↳ p50 latency", "µs", "lower", 1),
    Metric("pipe_p99_us", "  ↳ p99 latency", "µs", "lower", 1),
    Metric("conc_rps", "`status`, 1000 conns, depth 1 each", "req/s", "higher"),
    Metric("conc_p50_us", "  ↳ p50 latency", "µs", "lower", 1),
    Metric("conc_p99_us", "  ↳ p99 latency", "µs", "lower", 1),
    Metric("big_ms", "one 7 MiB frame, round trip", "ms", "lower", 1),
    Metric("stream_nps", "streamed `session/update` notifications", "notif/s", "higher"),
)


@dataclass(frozen=True)
class StorageRow:
    """A daemon-only scenario on the storage path, reported as req/s and as a ratio to `status` (seq_rps)."""

    key: str
    label: str
    method: str
    conns: int
    target: float | None  # issue 15: minimum ratio to `status`, 1 conn, depth 1, same run


# Params that name a session are filled in by `storage_setup` ("{listed}", "{talker}").
STORAGE_ROWS: Final = (
    StorageRow("list_rps", "`session/list` (20 sessions), 1 conn", "session/list", 1, 0.25),
    StorageRow("list16_rps", "`session/list` (20 sessions), 16 conns", "session/list", 16, None),
    StorageRow("config_rps", "`config/get`, 1 conn", "config/get", 1, 0.5),
    StorageRow("messages_rps", "`session/messages` (20 messages), 1 conn", "session/messages", 1, 0.2),
    StorageRow("messages16_rps", "`session/messages` (20 messages), 16 conns", "session/messages", 16, None),
    StorageRow("turn_rps", "scripted turn (`session/prompt`), sequential", "session/prompt", 1, 0.05),
    StorageRow("new_rps", "`session/new`, sequential", "session/new", 1, 0.1),
)
STORAGE_SESSIONS: Final = 20  # sessions `session/list` returns
STORAGE_TURNS: Final = 10  # turns on the `session/messages` session: a user and an assistant row each
# `session/new` for a few seconds makes thousands of live sessions; the default cap (64) would refuse them.
WARM_STARTS: Final = 5  # starts per warm start-up row and repeat, their median reported
STORAGE_CONFIG: Final = "[limits]\nmax_sessions = 1000000\n"


@dataclass
class Options:
    targets: list[str]
    duration: float
    warmup: float
    repeat: int
    conns: int
    depth: int
    big_size: int
    stream_count: int
    daemon_cmd: list[str]
    pin: bool
    json_out: Path | None
    quiet_wait: float
    storage: bool = True  # the daemon-only storage rows
    transport: bool = True  # everything but `status` ping-pong (RSS per connection, pipelined, 1000 conns, …)


@dataclass
class Server:
    """A started target process; stderr is drained by a thread so a chatty daemon never blocks on it."""

    name: str
    proc: subprocess.Popen[bytes]
    socket: str
    workdir: str
    started: float
    ready_at: float | None = None
    owns_workdir: bool = True  # removed by stop(); False for the start-up rows' restarts on one data dir
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))
    ready_event: threading.Event = field(default_factory=threading.Event)

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("VmRSS not found")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


class BenchError(RuntimeError):
    pass


def log(msg: str) -> None:
    sys.stderr.write(f"[bench] {msg}\n")
    sys.stderr.flush()


def compile_loadgen(build_dir: Path) -> Path:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise BenchError("gcc not found: needed to build benchmarks/loadgen.c")
    out = build_dir / "loadgen"
    subprocess.run([gcc, "-O2", "-o", str(out), str(LOADGEN_SRC), "-lm"], check=True)
    return out


def default_daemon_cmd() -> list[str]:
    # Prefer the console script of the running interpreter: a pyenv shim would add its own start-up time.
    local = Path(sys.executable).parent / "zeroclaw"
    exe = str(local) if local.exists() else (shutil.which("zeroclaw") or "zeroclaw")
    return [exe, "daemon"]


def cpu_busy_fraction(seconds: float = 0.5) -> float:
    """How busy the machine is before we start: other load makes every number here meaningless."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            vals = [int(v) for v in fh.readline().split()[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        return sum(vals), idle

    t1, i1 = sample()
    time.sleep(seconds)
    t2, i2 = sample()
    return 0.0 if t2 == t1 else 1.0 - (i2 - i1) / (t2 - t1)


def wait_for_quiet(max_wait: float, threshold: float = 0.15) -> float:
    """Wait (up to max_wait s) until other processes leave the CPUs alone; returns the last busy fraction."""
    deadline = time.monotonic() + max_wait
    busy = cpu_busy_fraction()
    while busy > threshold and time.monotonic() < deadline:
        busy = cpu_busy_fraction(1.0)
    return busy


def cpu_plan(pin: bool) -> tuple[set[int] | None, int | None]:
    """With --pin: server on the first CPUs, load generator on the last one, so they never share a core."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return None, None
    return set(cpus[:-1]), cpus[-1]


def start_server(
    name: str, opts: Options, server_cpus: set[int] | None, *, workdir: str | None = None, gateway: bool = False
) -> Server:
    """Start a target in a fresh temp dir, or in `workdir` (kept by stop()); the daemon with its gateway if asked."""
    owns_workdir = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix=f"zcb-{name[:1]}-")  # short: AF_UNIX paths are limited to 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    if name == "floor":
        sock = os.path.join(workdir, "floor.sock")
        argv = [sys.executable, str(FLOOR_SCRIPT), sock]
        marker: re.Pattern[str] = re.compile(r"^ready$")
    else:
        sock = os.path.join(workdir, "data", "daemon.sock")
        if opts.storage:
            Path(workdir, "config.toml").write_text(STORAGE_CONFIG)
        cmd = [part.replace("{config_dir}", workdir) for part in opts.daemon_cmd]
        if not any("{config_dir}" in part for part in opts.daemon_cmd):
            cmd += ["--config-dir", workdir, "--no-gateway"]
        if gateway:  # any free port: the ready line names it
            cmd = [part for part in cmd if part != "--no-gateway"] + ["--gateway-port", "0"]
        argv = cmd
        marker = re.compile(r"daemon ready")
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if server_cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(proc.pid, server_cpus)
    server = Server(name=name, proc=proc, socket=sock, workdir=workdir, started=started, owns_workdir=owns_workdir)

    def drain() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if server.ready_at is None and marker.search(line):
                server.ready_at = time.perf_counter()
                m = DAEMON_READY_RE.search(line)
                if m:
                    server.socket = m.group(1)
                server.ready_event.set()
            server.tail.append(line)
        server.ready_event.set()  # EOF: wake the waiter so it sees the exit

    threading.Thread(target=drain, name=f"{name}-stderr", daemon=True).start()
    if not server.ready_event.wait(READY_TIMEOUT_S) or server.ready_at is None:
        server.stop()
        tail = "\n".join(server.tail)
        raise BenchError(f"{name} did not become ready (exit={proc.poll()}): {' '.join(argv)}\n{tail}")
    return server


def loadgen(exe: Path, cpu: int | None, sock: str, *args: str, budget: float) -> dict[str, Any]:
    argv = [str(exe), "--socket", sock, "--timeout", str(IO_TIMEOUT_S), *args]
    if cpu is not None:
        argv += ["--cpu", str(cpu)]
    done = subprocess.run(argv, capture_output=True, timeout=budget + 2 * IO_TIMEOUT_S + 10, check=False)
    out = done.stdout.decode().strip().splitlines()
    if not out:
        raise BenchError(f"loadgen printed nothing (rc={done.returncode}): {done.stderr.decode()[-500:]}")
    result: dict[str, Any] = json.loads(out[-1])
    if "error" in result:
        raise BenchError(f"loadgen: {result['error']}")
    return result


def rss_per_connection(exe: Path, cpu: int | None, server: Server, conns: int) -> tuple[float, dict[str, Any]]:
    """Open `conns` connections, initialize each, and compare the server's VmRSS before and after."""
    before = server.rss_kib()
    argv = [str(exe), "--socket", server.socket, "--mode", "hold", "--conns", str(conns)]
    argv += ["--duration", "60", "--timeout", str(IO_TIMEOUT_S)]
    if cpu is not None:
        argv += ["--cpu", str(cpu)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline().decode().strip()  # printed once every connection is initialized
        info: dict[str, Any] = json.loads(line) if line else {"error": "hold printed nothing"}
        if "error" in info:
            raise BenchError(f"loadgen hold: {info['error']}")
        time.sleep(0.3)  # let the server finish bookkeeping for the last few connections
        after = server.rss_kib()
        proc.stdin.close()  # tells the hold to close its connections and exit
        proc.wait(timeout=IO_TIMEOUT_S + 5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    info["rss_before_kib"], info["rss_after_kib"] = before, after
    return (after - before) / conns, info


WARM_ROWS: Final = (("ready_warm_ms", False), ("ready_warm_gw_ms", True))


def measure_startups(opts: Options, server_cpus: set[int] | None) -> dict[str, dict[str, float | None]]:
    """exec → ready on an existing data dir (the daemon's database made by a first start), gateway off, then on:
    the median of `WARM_STARTS` starts each. The targets' starts alternate, one of each in turn, so a slow spell
    of the shared VM (one start swings by ±30 %) hits the floor and the daemon alike. The floor has no data dir or
    gateway: its rows are plain restarts, the yardstick for the ratios."""
    workdirs = {name: tempfile.mkdtemp(prefix=f"zcb-{name[:1]}-") for name in opts.targets}
    samples: dict[str, dict[str, list[float]]] = {name: {key: [] for key, _ in WARM_ROWS} for name in opts.targets}
    try:
        for name in opts.targets:
            start_server(name, opts, server_cpus, workdir=workdirs[name]).stop()
        for key, gateway in WARM_ROWS:
            for _ in range(WARM_STARTS):
                for name in opts.targets:
                    server = start_server(
                        name, opts, server_cpus, workdir=workdirs[name], gateway=gateway and name == "daemon"
                    )
                    assert server.ready_at is not None
                    samples[name][key].append((server.ready_at - server.started) * 1e3)
                    server.stop()
    finally:
        for workdir in workdirs.values():
            shutil.rmtree(workdir, ignore_errors=True)
    return {name: {key: statistics.median(v) for key, v in rows.items()} for name, rows in samples.items()}


def measure_target(
    name: str, opts: Options, exe: Path, raw: list[dict[str, Any]], startup: dict[str, float | None]
) -> dict[str, float | None]:
    server_cpus, lg_cpu = cpu_plan(opts.pin)
    out: dict[str, float | None] = {m.key: None for m in METRICS}
    out.update({row.key: None for row in STORAGE_ROWS})
    out["seq_after_rps"] = None
    rec: dict[str, Any] = {"errors": []}
    raw.append(rec)
    out.update(startup)
    server = start_server(name, opts, server_cpus)
    try:
        assert server.ready_at is not None
        out["ready_ms"] = (server.ready_at - server.started) * 1e3
        time.sleep(0.3)
        out["idle_rss_mib"] = server.rss_kib() / 1024
        d, w = str(opts.duration), str(opts.warmup)

        def run(key: str, *args: str, budget: float) -> dict[str, Any] | None:
            try:
                res = loadgen(exe, lg_cpu, server.socket, *args, budget=budget)
            except (BenchError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                log(f"{name}: {key} failed: {exc}")
                rec[key] = {"error": str(exc)}
                rec["errors"].append(f"{key}: {exc}")
                if server.proc.poll() is not None:
                    raise BenchError(f"{name} exited (rc={server.proc.returncode})") from exc
                return None
            rec[key] = res
            return res

        # Warm the status path so one-off lazy imports are not billed to the per-connection RSS.
        run("warmup", "--mode", "rps", "--conns", "1", "--depth", "1", "--duration", "0.3", budget=0.3)
        if not opts.transport:
            args = ("--mode", "rps", "--conns", "1", "--depth", "1", "--duration", d, "--warmup", w)
            res = run("seq", *args, budget=opts.duration)
            if res is not None:
                out["seq_rps"] = float(res["rps"])
                out["seq_p50_us"] = float(res["lat_us"]["p50"])
                out["seq_p99_us"] = float(res["lat_us"]["p99"])
            if name == "daemon" and opts.storage:
                measure_storage(server.socket, run, out, opts)
            rec["summary"] = out
            return out
        try:
            out["rss_per_conn_kib"], rec["hold"] = rss_per_connection(exe, lg_cpu, server, opts.conns)
        except (BenchError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
            log(f"{name}: rss per connection failed: {exc}")
            rec["hold"] = {"error": str(exc)}
            rec["errors"].append(f"hold: {exc}")
        time.sleep(0.2)
        scenarios = (("seq", "1", "1"), ("pipe", "1", str(opts.depth)), ("conc", str(opts.conns), "1"))
        for key, conns, depth in scenarios:
            args = ("--mode", "rps", "--conns", conns, "--depth", depth, "--duration", d, "--warmup", w)
            res = run(key, *args, budget=opts.duration)
            if res is not None:
                if res.get("closed") or res.get("error_replies"):
                    log(f"{name}: {key}: closed={res.get('closed')} error_replies={res.get('error_replies')}")
                out[f"{key}_rps"] = float(res["rps"])
                out[f"{key}_p50_us"] = float(res["lat_us"]["p50"])
                out[f"{key}_p99_us"] = float(res["lat_us"]["p99"])
        res = run("big", "--mode", "big", "--size", str(opts.big_size), budget=IO_TIMEOUT_S)
        if res is not None:
            out["big_ms"] = float(res["rtt_ms"])
        try:
            out["stream_nps"] = stream_rate(server.socket, name, opts.stream_count)
        except (BenchError, OSError, ValueError) as exc:
            log(f"{name}: stream failed: {exc}")
            rec["errors"].append(f"stream: {exc}")
        if name == "daemon" and opts.storage:
            measure_storage(server.socket, run, out, opts)
        rec["summary"] = out
        if server.proc.poll() is not None:
            raise BenchError(f"{name} exited during the run (rc={server.proc.returncode})")
    finally:
        server.stop()
    return out


class LineClient:
    """A blocking JSON-RPC client for set-up calls: answers by id, notifications skipped."""

    def __init__(self, sock_path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(IO_TIMEOUT_S * 3)
        self.sock.connect(sock_path)
        self.pending = b""
        self.next_id = 0
        self.call("initialize", {"protocolVersion": 1})

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.sock.sendall(
            json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": rid}).encode() + b"\n"
        )
        while True:
            while b"\n" not in self.pending:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise BenchError("closed")
                self.pending += chunk
            line, _, self.pending = self.pending.partition(b"\n")
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") != rid:
                continue  # a notification
            if "result" not in reply:
                raise BenchError(f"{method}: {reply.get('error')}")
            return reply["result"]

    def close(self) -> None:
        self.sock.close()


def storage_setup(sock_path: str) -> dict[str, str]:
    """20 sessions for `session/list`; the first gets 20 transcript rows (10 scripted turns), the second talks."""
    client = LineClient(sock_path)
    try:
        sids = [client.call("session/new", {})["sessionId"] for _ in range(STORAGE_SESSIONS)]
        for i in range(STORAGE_TURNS):
            client.call("session/prompt", {"sessionId": sids[0], "prompt": f"hello number {i}"})
        count = client.call("session/messages", {"sessionId": sids[0], "limit": 0})["total"]
        if count != 2 * STORAGE_TURNS:
            raise BenchError(f"expected {2 * STORAGE_TURNS} rows on the listed session, got {count}")
    finally:
        client.close()
    return {"listed": sids[0], "talker": sids[1]}


def storage_params(row: StorageRow, sids: dict[str, str]) -> dict[str, Any]:
    if row.method == "session/messages":
        return {"sessionId": sids["listed"], "limit": 2 * STORAGE_TURNS}
    if row.method == "session/prompt":
        return {"sessionId": sids["talker"], "prompt": "hello there"}
    return {}


def measure_storage(sock_path: str, run: Any, out: dict[str, float | None], opts: Options) -> None:
    """The storage rows of issue 15, each one loadgen run of one fixed request (`--params`)."""
    try:
        sids = storage_setup(sock_path)
    except (BenchError, OSError, ValueError) as exc:
        log(f"daemon: storage set-up failed: {exc}")
        return
    d, w = str(opts.duration), str(opts.warmup)
    for row in STORAGE_ROWS:
        if row.method == "session/new":
            # `status` once more, before `session/new` leaves thousands of live sessions behind (status answers
            # depend on them): the VM's speed drifts within a repeat, so ratios use the mean of both measurements.
            args = ("--mode", "rps", "--conns", "1", "--depth", "1", "--duration", d, "--warmup", w)
            res = run("seq_after", *args, budget=opts.duration)
            if res is not None:
                out["seq_after_rps"] = float(res["rps"])
        params = json.dumps(storage_params(row, sids), separators=(",", ":"))
        args = ("--mode", "rps", "--conns", str(row.conns), "--depth", "1", "--duration", d, "--warmup", w)
        res = run(row.key, *args, "--method", row.method, "--params", params, budget=opts.duration)
        if res is not None:
            if res.get("error_replies"):
                log(f"daemon: {row.key}: error_replies={res.get('error_replies')}")
            out[row.key] = float(res["rps"])


def status_rate(run_: dict[str, float | None]) -> float | None:
    """`status` ping-pong of one repeat: the mean of the measurements before and after the storage rows."""
    got = [v for v in (run_.get("seq_rps"), run_.get("seq_after_rps")) if v]
    return sum(got) / len(got) if got else None


def storage_markdown(medians: dict[str, float | None], per_repeat: list[dict[str, float | None]]) -> str:
    """Storage rows as req/s and as a ratio to the daemon's own `status` ping-pong, medians of per-repeat ratios."""
    head = ["scenario", "req/s", "ratio to `status`", "target", "", "per repeat"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    status = median([status_rate(r) for r in per_repeat])
    lines.append(f"| `status`, 1 conn, depth 1 (mean of before and after the rows) | {fmt(status, 0)} | 1.00x | | | |")
    for row in STORAGE_ROWS:
        ratios_ = [r[row.key] / s for r in per_repeat if r.get(row.key) and (s := status_rate(r))]
        ratio = statistics.median(ratios_) if ratios_ else None
        target = "" if row.target is None else f"≥ {row.target:g}x"
        met = "" if row.target is None or ratio is None else ("met" if ratio >= row.target else "**not met**")
        cells = [
            row.label,
            fmt(medians.get(row.key), 0),
            "n/a" if ratio is None else f"{ratio:.3f}x",
            target,
            met,
            " ".join(f"{x:.3f}" for x in ratios_),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stream_rate(sock_path: str, name: str, count: int) -> float:
    """Notifications per second a single client receives from one long stream.

    The floor emits `count` `session/update` notifications for `bench/stream`; the daemon's scripted provider
    streams `count` chunks for the prompt `/stream N` (each becomes one `session/update`). The same reader
    counts both: it only counts newlines in large reads, so it is far faster than either server.
    """
    with contextlib.closing(socket.socket(socket.AF_UNIX)) as s:
        s.settimeout(IO_TIMEOUT_S * 3)
        s.connect(sock_path)
        pending = b""

        def call(method: str, params: dict[str, Any], rid: int) -> dict[str, Any]:
            nonlocal pending
            s.sendall(json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": rid}).encode() + b"\n")
            while b"\n" not in pending:
                chunk = s.recv(65536)
                if not chunk:
                    raise BenchError("closed")
                pending += chunk
            line, _, pending = pending.partition(b"\n")
            reply: dict[str, Any] = json.loads(line)
            if "result" not in reply:
                raise BenchError(f"{method}: {reply.get('error')}")
            return reply

        call("initialize", {"protocolVersion": 1}, 1)
        if name == "daemon":
            sid = call("session/new", {}, 2)["result"]["sessionId"]
            request = {
                "jsonrpc": "2.0",
                "method": "session/prompt",
                "id": "end",
                "params": {"sessionId": sid, "prompt": f"/stream {count}"},
            }
        else:
            request = {
                "jsonrpc": "2.0",
                "method": "bench/stream",
                "id": "end",
                "params": {"count": count, "text": "lorem "},
            }
        # Every notification and the final answer are one line each; the daemon adds turn_complete.
        expected = count + (2 if name == "daemon" else 1)
        t0 = time.perf_counter()
        s.sendall(json.dumps(request).encode() + b"\n")
        lines = 0
        while lines < expected:
            chunk = s.recv(1 << 20)
            if not chunk:
                raise BenchError(f"closed during the stream after {lines} lines")
            lines += chunk.count(b"\n")
        elapsed = time.perf_counter() - t0
    return count / elapsed


def median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def ratios(medians: dict[str, dict[str, float | None]]) -> dict[str, float]:
    if "floor" not in medians or "daemon" not in medians:
        return {}
    out: dict[str, float] = {}
    for m in METRICS:
        f, d = medians["floor"][m.key], medians["daemon"][m.key]
        if f and d is not None:
            out[m.key] = d / f
    return out


def markdown(medians: dict[str, dict[str, float | None]], targets: list[str], opts: Options) -> str:
    head = ["scenario", "unit", *targets]
    both = "floor" in targets and "daemon" in targets
    if both:
        head += ["daemon/floor", "better"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in METRICS:
        label = m.label.replace("7 MiB", f"{opts.big_size / 2**20:g} MiB")
        label = label.replace("64 in flight", f"{opts.depth} in flight").replace("1000", str(opts.conns))
        row = [label, m.unit, *(fmt(medians[t][m.key], m.digits) for t in targets)]
        if both:
            f, dm = medians["floor"][m.key], medians["daemon"][m.key]
            row += ["n/a" if not f or dm is None else f"{dm / f:.2f}x", m.better]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=("floor", "daemon"), help="benchmark one target only")
    p.add_argument("--duration", type=float, default=3.0, help="seconds per throughput scenario (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="seconds at the start of each not counted")
    p.add_argument("--repeat", type=int, default=3, help="fresh process per target per repeat (default 3)")
    p.add_argument("--conns", type=int, default=1000, help="connections for the concurrency/RSS scenarios")
    p.add_argument("--depth", type=int, default=64, help="requests in flight in the pipelined scenario")
    p.add_argument("--big-size", type=int, default=7 * 1024 * 1024, help="bytes in the big frame")
    p.add_argument("--stream-count", type=int, default=200_000, help="notifications in the stream scenario")
    p.add_argument(
        "--daemon-cmd",
        help="daemon command (shell syntax); '{config_dir}' is substituted, else "
        "'--config-dir DIR --no-gateway' is appended (default: zeroclaw daemon)",
    )
    p.add_argument(
        "--pin",
        action="store_true",
        help="pin the server to the first CPUs and the load generator to the last one (default: let the "
        "scheduler place them; on small VMs cross-CPU wake-ups can dominate ping-pong latency)",
    )
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="before each target run, wait up to S seconds for the machine to be <15%% busy (shared hosts)",
    )
    p.add_argument("--json", type=Path, help="also write all raw results to this file")
    p.add_argument("--no-storage", action="store_true", help="skip the daemon's storage-path rows")
    p.add_argument(
        "--storage-only",
        action="store_true",
        help="daemon only: `status` ping-pong and the storage-path rows, nothing else (quick A/B of storage)",
    )
    a = p.parse_args(argv)
    if a.duration <= 0 or a.repeat < 1 or a.conns < 1 or a.depth < 1:
        p.error("--duration, --repeat, --conns and --depth must be positive")
    return Options(
        targets=["daemon"] if a.storage_only else [a.only] if a.only else ["floor", "daemon"],
        duration=a.duration,
        warmup=a.warmup if a.warmup < a.duration else 0.0,
        repeat=a.repeat,
        conns=a.conns,
        depth=a.depth,
        big_size=a.big_size,
        stream_count=a.stream_count,
        daemon_cmd=shlex.split(a.daemon_cmd) if a.daemon_cmd else default_daemon_cmd(),
        pin=a.pin,
        json_out=a.json,
        quiet_wait=a.quiet_wait,
        storage=not a.no_storage,
        transport=not a.storage_only,
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if (limit := raise_nofile()) != resource.RLIM_INFINITY and limit < 2200:
        log(f"warning: RLIMIT_NOFILE is {limit}; 1000-connection scenarios may fail")
    busy = wait_for_quiet(opts.quiet_wait)
    if busy > 0.15:
        log(f"warning: the machine is already {busy:.0%} busy; results will be noisy")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # An editable install then compiles every module at every start: the start-up rows measure the compiler.
        log("warning: PYTHONDONTWRITEBYTECODE is set; with an editable install, exec → ready includes compiling")
    runs: dict[str, list[dict[str, float | None]]] = {t: [] for t in opts.targets}
    raw: dict[str, list[dict[str, Any]]] = {t: [] for t in opts.targets}
    failures: list[str] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="zcb-build-") as build:
        exe = compile_loadgen(Path(build))
        for r in range(opts.repeat):
            startups: dict[str, dict[str, float | None]] = {name: {} for name in opts.targets}
            if opts.transport:
                log(f"repeat {r + 1}/{opts.repeat}: start-up, alternating {' and '.join(opts.targets)}")
                try:
                    startups = measure_startups(opts, cpu_plan(opts.pin)[0])
                except BenchError as exc:
                    log(f"start-up: {exc}")
                    failures.append(f"start-up: {exc}")
            # Alternate targets inside each repeat so slow drifts of the machine hit both alike.
            for name in opts.targets:
                pre = wait_for_quiet(opts.quiet_wait) if opts.quiet_wait > 0 else None
                log(f"repeat {r + 1}/{opts.repeat}: {name}" + (f" (machine {pre:.0%} busy)" if pre else ""))
                try:
                    runs[name].append(measure_target(name, opts, exe, raw[name], startups[name]))
                    raw[name][-1]["busy_before"] = pre
                    failures.extend(f"{name}, repeat {r + 1}: {e}" for e in raw[name][-1]["errors"])
                except BenchError as exc:
                    log(f"{name}: {exc}")
                    failures.append(f"{name}: {exc}")
    keys = [m.key for m in METRICS] + [row.key for row in STORAGE_ROWS] + ["seq_after_rps"]
    medians = {t: {k: median([run.get(k) for run in runs[t]]) for k in keys} for t in opts.targets}
    elapsed = time.perf_counter() - t0
    server_cpus, lg_cpu = cpu_plan(opts.pin)
    print(
        f"zeroclaw benchmark: medians of {opts.repeat} run(s), {opts.duration:g} s per throughput scenario "
        f"({opts.warmup:g} s warm-up), {os.cpu_count()} CPUs, "
        + (f"server on CPUs {sorted(server_cpus)}, loadgen on CPU {lg_cpu}" if server_cpus else "no pinning")
        + f", machine {busy:.0%} busy before start, {elapsed:.0f} s total\n"
    )
    print(markdown(medians, opts.targets, opts))
    if "daemon" in opts.targets and opts.storage:
        print("\nStorage path (daemon only; ratios are per repeat to the same process's `status`, then the median):\n")
        print(storage_markdown(medians["daemon"], runs["daemon"]))
    if failures:
        print("\nfailures:\n" + "\n".join(f"- {f.splitlines()[0]}" for f in failures))
    if opts.json_out is not None:
        doc = {
            "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()},
            "machine": {"cpus": os.cpu_count(), "busy_before": busy, "loadavg": os.getloadavg()},
            "medians": medians,
            "ratio": ratios(medians),
            "runs": runs,
            "raw": raw,
            "failures": failures,
        }
        opts.json_out.write_text(json.dumps(doc, indent=2) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
