"""Prove a plain install serves (R-PKG-1): start `zeroclaw daemon`, initialize + status over its socket.

    python serve_check.py ZEROCLAW_EXECUTABLE

Run by `.ci/run` with the `zeroclaw` of a fresh virtual environment made by `pip install .` (no extras), from a
directory outside the source tree, so nothing but the installed package can be imported. Standard library only.
Also checks that the gateway answers `/health` and its OpenAPI document (its answer models, with the runtime
dependencies alone) and serves the web panel from the installed data files, and that
SIGTERM ends the daemon with exit 0 and removes its socket. The daemon runs with `OTEL_EXPORTER_OTLP_ENDPOINT` set
(to a port nothing listens on): without the `[otel]` extra that must be one warning, not a failed start (R-MODEL-6).
Prints one summary line; exits 1 on any failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

READY = re.compile(r"^zeroclaw daemon ready: socket=(?P<socket>.+) gateway=(?P<gateway>\S+)$")
TIMEOUT = 30.0


def wait_ready(daemon: subprocess.Popen[str], seen: list[str]) -> tuple[str, str]:
    """The socket and gateway of the ready line; the lines before it are added to `seen`."""
    assert daemon.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = daemon.stderr.readline()
        if not line:
            break
        seen.append(line.rstrip())
        match = READY.match(line.strip())
        if match:
            return match["socket"], match["gateway"]
    raise SystemExit("the daemon never printed its ready line:\n" + "\n".join(seen[-20:]))


def call_socket(path: str) -> tuple[dict[str, object], dict[str, object]]:
    frames = [
        {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 1},
        {"jsonrpc": "2.0", "method": "status", "params": {}, "id": 2},
    ]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(path)
        sock.sendall(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        buffer = b""
        answers: dict[object, dict[str, object]] = {}
        while len(answers) < 2:
            chunk = sock.recv(65536)
            if not chunk:
                raise SystemExit("the daemon closed the socket before answering both calls")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    answer = json.loads(line)
                    answers[answer.get("id")] = answer
    return answers[1], answers[2]


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310  # the daemon's own loopback URL
        return response.status, response.read().decode("utf-8", "replace")


def main(executable: str) -> int:
    with tempfile.TemporaryDirectory(prefix="zeroclaw-serve-check-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
        env["HOME"] = tmp
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"  # no [otel] extra here: one warning, no traces
        env.pop("OTEL_SDK_DISABLED", None)
        command = [executable, "daemon", "--config-dir", str(Path(tmp) / "cfg"), "--gateway-port", "0"]
        daemon = subprocess.Popen(command, cwd=tmp, env=env, stderr=subprocess.PIPE, text=True)
        try:
            before_ready: list[str] = []
            sock, gateway = wait_ready(daemon, before_ready)
            if not any("pip install 'zeroclaw[otel]'" in line for line in before_ready):
                raise SystemExit("no warning about the missing [otel] extra:\n" + "\n".join(before_ready[-20:]))
            init, status = call_socket(sock)
            init_result = init.get("result")
            status_result = status.get("result")
            if not isinstance(init_result, dict) or init_result.get("protocolVersion") != 1:
                raise SystemExit(f"initialize failed: {init}")
            if not isinstance(status_result, dict):
                raise SystemExit(f"status failed: {status}")
            health, _ = get(f"{gateway}/health")
            openapi, document = get(f"{gateway}/openapi.json")
            panel, page = get(f"{gateway}/")
            schemas = json.loads(document).get("components", {}).get("schemas", {}) if openapi == 200 else {}
            if health != 200 or "Status" not in schemas or panel != 200 or "<html" not in page.lower():
                raise SystemExit(f"gateway: /health {health}, /openapi.json {openapi}, / {panel}")
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=TIMEOUT)
            if code != 0 or Path(sock).exists():
                raise SystemExit(f"SIGTERM: exit {code}, socket left behind: {Path(sock).exists()}")
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
    version = init_result.get("serverVersion")
    print(
        f"plain install serves: version {version}, initialize + status over {sock}, gateway and panel, "
        "an OTLP endpoint without the [otel] extra, clean exit"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
