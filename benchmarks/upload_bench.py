"""Upload benchmark (SPEC §8): chunked-upload throughput against a raw socket write, and staging memory.

    python benchmarks/upload_bench.py               # 5 repeats; prints a Markdown table
    python benchmarks/upload_bench.py --repeat 9 --json out.json

What it measures, on a fresh `zeroclaw daemon --no-gateway` in a temporary config dir:

* **chunked upload, 10 MB**: `file/upload/begin` → 10 `file/upload/chunk` calls (1 MiB, one in flight, as
  `zeroclaw upload` does) → `file/upload/commit`, timed from begin to the commit's answer; fresh random bytes
  each repeat, so nothing is deduplicated. Also with every chunk pipelined (sent without waiting).
* **commit alone**: the commit step for 10 MB (verification + write to the workspace, on the event loop).
* **status latency during uploads**: the worst `status` round trip on a second connection while uploads run,
  i.e. how long the event loop is held by chunk handling and the commit step.
* **raw socket write**: the same 10,000,000 bytes (and their 13,333,336-byte base64 form) written to a Unix
  socket whose peer only reads and discards: the transport ceiling on this machine.
* **staging memory**: daemon `VmRSS` idle, then with 26 uploads of 10,000,000 bytes fully staged and not
  committed (260,000,000 bytes, 96.9 % of the default 268,435,456-byte budget) across 7 connections, and a
  27th `begin` that must get `-32005 upload_budget`.

Every socket is on this machine; every loop is bounded.
"""

from __future__ import annotations

import argparse
import base64
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

import orjson

SIZE = 10_000_000
CHUNK = 1_048_576
READY_RE = re.compile(r"zeroclaw daemon ready: socket=(\S+)")


class Conn:
    """A blocking NDJSON client: one request at a time, or a batch pipelined."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.buf = b""
        self.ids = 0
        self.call("initialize", {"protocolVersion": 1})

    def send(self, method: str, params: dict[str, Any]) -> int:
        self.ids += 1
        frame = {"jsonrpc": "2.0", "method": method, "params": params, "id": self.ids}
        self.sock.sendall(orjson.dumps(frame) + b"\n")
        return self.ids

    def recv(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("daemon closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return orjson.loads(line)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any]) -> Any:
        rid = self.send(method, params)
        while True:
            msg = self.recv()
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def close(self) -> None:
        self.sock.close()


def rss(pid: int, field: str = "VmRSS") -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    m = re.search(rf"^{field}:\s+(\d+) kB$", text, re.M)
    return int(m[1]) * 1024 if m else 0


def start_daemon(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    cfg = root / "cfg"
    cfg.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
    env["HOME"] = str(root)
    exe = shutil.which("zeroclaw")
    cmd = [exe] if exe else [sys.executable, "-c", "from app.cli import main; main()"]
    proc = subprocess.Popen(
        [*cmd, "daemon", "--config-dir", str(cfg), "--no-gateway", "--log-level", "warning"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        if m := READY_RE.search(line):
            threading.Thread(target=lambda: proc.stderr.read() if proc.stderr else None, daemon=True).start()
            return proc, m[1]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("the daemon did not become ready")


def upload(conn: Conn, sid: str, data: bytes, *, pipelined: bool = False) -> tuple[float, float]:
    """(seconds for the whole upload, seconds for the commit alone)."""
    t0 = time.perf_counter()
    up = conn.call("file/upload/begin", {"session_id": sid, "size_bytes": len(data)})["upload_id"]
    chunks = [
        {"upload_id": up, "offset": o, "data_b64": base64.b64encode(data[o : o + CHUNK]).decode()}
        for o in range(0, len(data), CHUNK)
    ]
    if pipelined:
        ids = {conn.send("file/upload/chunk", c) for c in chunks}
        while ids:
            msg = conn.recv()
            assert "result" in msg, msg
            ids.discard(msg["id"])
    else:
        for c in chunks:
            conn.call("file/upload/chunk", c)
    t1 = time.perf_counter()
    entry = conn.call("file/upload/commit", {"upload_id": up})
    t2 = time.perf_counter()
    assert entry["size_bytes"] == len(data)
    return t2 - t0, t2 - t1


def raw_write(nbytes: int) -> float:
    """Seconds to push `nbytes` through a Unix socket to a reader that discards them."""
    client, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    done = threading.Event()

    def sink() -> None:
        left = nbytes
        while left > 0:
            data = peer.recv(1 << 20)
            if not data:
                break
            left -= len(data)
        done.set()

    threading.Thread(target=sink, daemon=True).start()
    payload = os.urandom(nbytes)
    t0 = time.perf_counter()
    client.sendall(payload)
    done.wait(30)
    elapsed = time.perf_counter() - t0
    client.close()
    peer.close()
    return elapsed


def status_pinger(path: str, stop: threading.Event, out: list[float]) -> None:
    conn = Conn(path)
    try:
        while not stop.is_set():
            t0 = time.perf_counter()
            conn.call("status", {})
            out.append(time.perf_counter() - t0)
            time.sleep(0.001)
    finally:
        conn.close()


def staging_memory(path: str, pid: int, sid: str) -> dict[str, Any]:
    idle = rss(pid)
    conns = [Conn(path) for _ in range(7)]
    staged = 0
    try:
        for i in range(26):
            conn = conns[i // 4]
            data = os.urandom(SIZE)
            up = conn.call("file/upload/begin", {"session_id": sid, "size_bytes": SIZE})["upload_id"]
            for o in range(0, SIZE, CHUNK):
                chunk = base64.b64encode(data[o : o + CHUNK]).decode()
                conn.call("file/upload/chunk", {"upload_id": up, "offset": o, "data_b64": chunk})
            staged += SIZE
        time.sleep(0.3)
        full = rss(pid)
        refused = None
        try:
            conns[6].call("file/upload/begin", {"session_id": sid, "size_bytes": SIZE})
        except RuntimeError as exc:
            refused = str(exc)
        return {
            "idle_rss_mib": idle / 2**20,
            "staged_bytes": staged,
            "full_rss_mib": full / 2**20,
            "rss_growth_mib": (full - idle) / 2**20,
            "hwm_mib": rss(pid, "VmHWM") / 2**20,
            "27th_begin_refused": bool(refused and "upload_budget" in refused),
        }
    finally:
        for c in conns:
            c.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="zc-ub-", dir="/tmp"))
    proc, path = start_daemon(root)
    results: dict[str, Any] = {}
    try:
        owner = Conn(path)
        sid = owner.call("session/new", {"sessionId": "bench"})["sessionId"]
        upload(owner, sid, os.urandom(SIZE))  # warm-up: imports, first directory creation
        seq, commit, pipe = [], [], []
        pings: list[float] = []
        stop = threading.Event()
        pinger = threading.Thread(target=status_pinger, args=(path, stop, pings), daemon=True)
        pinger.start()
        for _ in range(args.repeat):
            total, c = upload(owner, sid, os.urandom(SIZE))
            seq.append(total)
            commit.append(c)
            total, _ = upload(owner, sid, os.urandom(SIZE), pipelined=True)
            pipe.append(total)
        stop.set()
        pinger.join(5)
        raw = [raw_write(SIZE) for _ in range(args.repeat)]
        raw64 = [raw_write(len(base64.b64encode(b"\0" * SIZE))) for _ in range(args.repeat)]
        owner.close()
        results = {
            "upload_seq_mb_s": SIZE / 1e6 / statistics.median(seq),
            "upload_pipelined_mb_s": SIZE / 1e6 / statistics.median(pipe),
            "commit_10mb_ms": statistics.median(commit) * 1e3,
            "status_p50_during_uploads_ms": statistics.median(pings) * 1e3 if pings else None,
            "status_max_during_uploads_ms": max(pings) * 1e3 if pings else None,
            "raw_socket_10mb_mb_s": SIZE / 1e6 / statistics.median(raw),
            "raw_socket_b64_mb_s": SIZE / 1e6 / statistics.median(raw64),
            **staging_memory(path, proc.pid, sid),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        ("chunked upload, 10 MB, 1 chunk in flight (`zeroclaw upload`)", "upload_seq_mb_s", "MB/s"),
        ("chunked upload, 10 MB, all chunks pipelined", "upload_pipelined_mb_s", "MB/s"),
        ("raw Unix-socket write, the same 10,000,000 bytes", "raw_socket_10mb_mb_s", "MB/s"),
        ("raw Unix-socket write, their base64 form (13.3 MB), per payload MB", "raw_socket_b64_mb_s", "MB/s"),
        ("commit step of 10 MB (verify + write + index)", "commit_10mb_ms", "ms"),
        ("`status` p50 on another connection during uploads", "status_p50_during_uploads_ms", "ms"),
        ("`status` worst case during uploads", "status_max_during_uploads_ms", "ms"),
        ("daemon VmRSS, idle", "idle_rss_mib", "MiB"),
        ("daemon VmRSS, 260,000,000 bytes staged (96.9 % of budget)", "full_rss_mib", "MiB"),
        ("  ↳ growth", "rss_growth_mib", "MiB"),
        ("daemon VmHWM at the end", "hwm_mib", "MiB"),
        ("27th 10 MB begin refused with -32005 upload_budget", "27th_begin_refused", ""),
    ]
    print(f"| measure (median of {args.repeat}) | value |\n|---|---|")
    for label, key, unit in rows:
        value = results.get(key)
        shown = f"{value:.1f} {unit}" if isinstance(value, float) else str(value)
        print(f"| {label} | {shown.strip()} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
