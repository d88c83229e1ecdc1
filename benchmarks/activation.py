#!/usr/bin/env python3
"""First connect → answered `initialize` through socket activation, against a warm daemon's start-up (R-SVC-1).

Three rows, each the median of `--runs` (default 7), the starts alternating so a slow spell of a shared machine
hits them alike; every start is on the same existing data dir (the database made by a first start), gateway off:

    warm start-up       exec → readiness line (`run.py`'s `15-startup` row, "exec → ready, existing data dir")
    warm → initialize   exec → the first answered `initialize` (connect retried every 1 ms until it is accepted)
    activated           `systemd-socket-activate` already listening; connect → answered `initialize`, the daemon
                        started by that connect (what a `zeroclaw.socket` unit gives)

    python benchmarks/activation.py [--runs 7] [--daemon-cmd "zeroclaw daemon"]

Target (issue 33): activated ≤ 1.5x warm start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INITIALIZE = b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\n'
TIMEOUT = 30.0
SCRUBBED_ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "ZEROCLAW_SOCKET")


def default_daemon_cmd() -> list[str]:
    local = Path(sys.executable).parent / "zeroclaw"  # not a pyenv shim: it would add its own start-up
    return [str(local) if local.exists() else (shutil.which("zeroclaw") or "zeroclaw"), "daemon"]


def daemon_argv(cmd: list[str], config_dir: Path) -> list[str]:
    return [*cmd, "--config-dir", str(config_dir), "--no-gateway", "--log-level", "warning"]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def read_answer(sock: socket.socket) -> None:
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the daemon closed the connection before answering initialize")
        data += chunk
    if b'"result"' not in data:
        raise RuntimeError(f"initialize failed: {data[:200]!r}")


def warm_ready(cmd: list[str], config_dir: Path) -> float:
    """exec → readiness line, ms."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        daemon_argv(cmd, config_dir), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment()
    )
    try:
        assert proc.stderr is not None
        for raw in proc.stderr:
            if raw.startswith(b"zeroclaw daemon ready"):
                return (time.perf_counter() - started) * 1e3
        raise RuntimeError(f"the daemon exited before it was ready (rc={proc.wait()})")
    finally:
        stop(proc)


def warm_initialize(cmd: list[str], config_dir: Path) -> float:
    """exec → first answered initialize, ms (connect retried until the socket accepts)."""
    endpoint = str(config_dir / "data" / "daemon.sock")
    started = time.perf_counter()
    proc = subprocess.Popen(
        daemon_argv(cmd, config_dir), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment()
    )
    try:
        while True:
            if proc.poll() is not None or time.perf_counter() - started > TIMEOUT:
                raise RuntimeError("the daemon never accepted a connection")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                try:
                    sock.connect(endpoint)
                except (FileNotFoundError, ConnectionRefusedError):
                    time.sleep(0.001)
                    continue
                sock.settimeout(TIMEOUT)
                sock.sendall(INITIALIZE)
                read_answer(sock)
                return (time.perf_counter() - started) * 1e3
    finally:
        stop(proc)


def activated(cmd: list[str], config_dir: Path, activate: str) -> float:
    """systemd-socket-activate listening → connect → answered initialize, ms."""
    endpoint = config_dir / "data" / "daemon.sock"
    with contextlib.suppress(FileNotFoundError):
        endpoint.unlink()  # what the last run's manager left; a new one binds its own
    env = environment()
    argv = [activate, f"--listen={endpoint}", "--fdname=rpc", *(x for k in env for x in ("-E", k))]
    proc = subprocess.Popen(
        [*argv, *daemon_argv(cmd, config_dir)], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    try:
        assert proc.stderr is not None
        for raw in proc.stderr:  # "Listening on <path> as 3."
            if raw.startswith(b"Listening on"):
                break
        else:
            raise RuntimeError(f"systemd-socket-activate did not listen (rc={proc.wait()})")
        started = time.perf_counter()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT)
            sock.connect(str(endpoint))
            sock.sendall(INITIALIZE)
            read_answer(sock)
            return (time.perf_counter() - started) * 1e3
    finally:
        stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="starts per row (default 7); the median is reported")
    parser.add_argument("--daemon-cmd", default=None, help="the daemon command (default: this venv's zeroclaw)")
    opts = parser.parse_args()
    activate = shutil.which("systemd-socket-activate")
    if activate is None:
        print("systemd-socket-activate not found (Debian: apt-get install systemd)", file=sys.stderr)
        return 1
    cmd = shlex.split(opts.daemon_cmd) if opts.daemon_cmd else default_daemon_cmd()
    root = Path(tempfile.mkdtemp(prefix="zcb-act-"))  # short: AF_UNIX paths are limited to 107 bytes
    try:
        config_dir = root / "cfg"
        warm_ready(cmd, config_dir)  # the first start makes the data dir and the database
        rows: dict[str, list[float]] = {"warm start-up": [], "warm → initialize": [], "activated": []}
        for _ in range(opts.runs):
            rows["warm start-up"].append(warm_ready(cmd, config_dir))
            rows["warm → initialize"].append(warm_initialize(cmd, config_dir))
            rows["activated"].append(activated(cmd, config_dir, activate))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in rows.items()}
    warm = medians["warm start-up"]
    for name, values in rows.items():
        shown = " ".join(f"{v:.1f}" for v in values)
        print(f"{name:18} median {medians[name]:7.1f} ms  {medians[name] / warm:.2f}x warm start-up  ({shown})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
