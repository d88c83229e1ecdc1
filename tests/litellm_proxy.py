"""A server this project did not write (R-MODEL-7): LiteLLM's proxy, started from its own virtualenv
(tests/py_tools.py) on a free port of 127.0.0.1 with tests/litellm/config.yaml, serving both
`/v1/chat/completions` and `/v1/messages` plus `/v1/models`. And `FaultProxy`, a TCP proxy the test puts in front
of it to answer an HTTP status instead (a 429 then success) or cut a stream midway.

Why LiteLLM and not llama.cpp's server (docs/agents.md, "Proof against real servers"): one process serves both API
kinds, answers in milliseconds with no model weights, and its mocks (`mock_response`, a custom provider for tool
calls) make every case deterministic; llama.cpp's server speaks no Anthropic Messages API.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from py_tools import TESTS, litellm_venv

MASTER_KEY = "sk-litellm-test-master-0123"
CONFIG_DIR = TESTS / "litellm"
START_TIMEOUT_SECS = 180.0
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP proxy of the env


@dataclass
class LiteLLM:
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    key: str = MASTER_KEY

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_litellm(workdir: Path) -> LiteLLM:
    python = litellm_venv() / "bin" / "python"
    port = free_port()
    log = workdir / "litellm.log"
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list from the internet
        "LITELLM_TELEMETRY": "False",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    env.pop("DATABASE_URL", None)
    command = [str(python), "-m", "litellm.proxy.proxy_cli", "--config", "config.yaml"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=CONFIG_DIR, env=env, stdout=out, stderr=subprocess.STDOUT)
    proxy = LiteLLM(port=port, process=process, log=log)
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the LiteLLM proxy exited ({process.returncode}):\n{proxy.log_tail()}")
        try:
            with _DIRECT.open(f"{proxy.base_url}/health/liveliness", timeout=2):
                return proxy
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            stop_litellm(proxy)
            raise AssertionError(f"the LiteLLM proxy did not start in {START_TIMEOUT_SECS:g} s:\n{proxy.log_tail()}")
        time.sleep(0.25)


def stop_litellm(proxy: LiteLLM) -> None:
    proxy.process.terminate()
    try:
        proxy.process.wait(10)
    except subprocess.TimeoutExpired:
        proxy.process.kill()
        proxy.process.wait(10)


@pytest.fixture(scope="session")
def litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLM]:
    proxy = start_litellm(tmp_path_factory.mktemp("litellm"))
    try:
        yield proxy
    finally:
        stop_litellm(proxy)


# -- faults ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """What the proxy does to one connection: answer `status` itself, or forward and cut the answer after
    `cut_after` bytes (an RST, as a dropped network does)."""

    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    cut_after: int | None = None


@dataclass
class FaultProxy:
    """A TCP proxy to `upstream_port` on 127.0.0.1; each new connection takes the next of `faults` (none: forward)."""

    upstream_port: int
    faults: list[Fault] = field(default_factory=list)
    connections: int = 0
    _listener: socket.socket = field(init=False)
    _stopping: bool = field(default=False, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stopping = True
        for thread in self._threads:
            thread.join(5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            fault = self.faults.pop(0) if self.faults else Fault()
            thread = threading.Thread(target=self._serve, args=(conn, fault), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket, fault: Fault) -> None:
        with contextlib.closing(conn):
            if fault.status is not None:
                _read_request(conn)
                head = f"HTTP/1.1 {fault.status} Fault\r\ncontent-length: {len(fault.body)}\r\nconnection: close\r\n"
                head += "".join(f"{k}: {v}\r\n" for k, v in fault.headers)
                conn.sendall(head.encode() + b"\r\n" + fault.body)
                return
            # Either side may hang up mid-exchange (a client that gave up on a cut stream): nothing left to relay.
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with contextlib.closing(upstream) as up, contextlib.suppress(ConnectionError):
                self._pump(conn, up, fault.cut_after)

    def _pump(self, conn: socket.socket, up: socket.socket, cut_after: int | None) -> None:
        answered = 0
        while not self._stopping:
            readable, _, _ = select.select([conn, up], [], [], 0.2)
            for source in readable:
                data = source.recv(65536)
                if not data:
                    return
                if source is up:
                    if cut_after is not None and answered + len(data) > cut_after:
                        conn.sendall(data[: max(cut_after - answered, 0)])
                        # RST, not FIN: the client sees the connection reset mid-body.
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    answered += len(data)
                    conn.sendall(data)
                else:
                    up.sendall(data)


def _read_request(conn: socket.socket) -> None:
    """Read one HTTP request (headers and a Content-Length body) so the client is not answered mid-send."""
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        part = conn.recv(65536)
        if not part:
            return
        body += part


@pytest.fixture
def fault_proxy(litellm: LiteLLM) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream_port=litellm.port)
    try:
        yield proxy
    finally:
        proxy.close()
