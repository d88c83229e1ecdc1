"""Harness for end-to-end tests (fixtures in conftest.py): a real `zeroclaw daemon` subprocess and a small
NDJSON client over its socket.

* `daemon_factory.start(config=..., args=..., env=...)` starts a daemon in a fresh temp config dir, waits for the
  readiness line on stderr and is always stopped (SIGTERM, then SIGKILL) at teardown.
* `daemon` is one such daemon per test; `shared_daemon` is one per module, for tests that do not change state.
* `Client` speaks NDJSON with a timeout on every wait, so no test can hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT / "tests") not in sys.path:  # benchmarks/crash_loop.py imports this module from outside pytest
    sys.path.insert(0, str(REPO_ROOT / "tests"))

import db_backend  # noqa: E402  (tests/db_backend.py: SQLite, or a fresh database on the test server)
import wire_recorder  # noqa: E402  (tests/e2e/wire_recorder.py: what the suites see, for the contract test)
from waiting import WaitTimeout, until, until_sync  # noqa: E402  (tests/waiting.py: the one polling helper)

READY_RE = re.compile(r"^zeroclaw daemon ready: socket=(?P<socket>.+) gateway=(?P<gateway>\S+)$")
READY_TIMEOUT = 20.0
STORAGE_SECTION = re.compile(r"^\s*\[storage\]", re.M)
STOP_TIMEOUT = 5.0
RECV_TIMEOUT = 5.0
DEFAULT_FRAME_LIMIT = 8 * 1024 * 1024


def zeroclaw_command() -> list[str]:
    exe = shutil.which("zeroclaw")
    if exe:
        return [exe]
    return [sys.executable, "-c", "from app.cli import main; main()"]


def clean_env(home: Path, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
    env["HOME"] = str(home)  # never touch the real ~/.zeroclaw
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def with_storage_url(config: str | Mapping[str, Mapping[str, Any]] | None, url: str) -> str:
    """The config.toml body with `[storage] url` added, unless the test chose a storage section itself."""
    body = toml_config(config)
    if STORAGE_SECTION.search(body):
        return body
    return f"{body.rstrip()}\n\n[storage]\nurl = {json.dumps(url)}\n".lstrip()


def toml_config(config: str | Mapping[str, Mapping[str, Any]] | None) -> str:
    """A config.toml body from a string, or from `{section: {key: value}}` (scalars only)."""
    if config is None or isinstance(config, str):
        return config or ""
    lines: list[str] = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    return "\n".join(lines)


class DaemonFailed(AssertionError):
    pass


class Daemon:
    """One `zeroclaw daemon` subprocess. Stderr is drained by a thread (never blocks the daemon)."""

    def __init__(
        self,
        *,
        root: Path,
        config_dir: Path | None,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        no_gateway: bool = True,
        launcher: Callable[[Mapping[str, str]], Sequence[str]] | None = None,
    ) -> None:
        self.root = root
        self.config_dir = config_dir
        self.home = root / "home"
        self.home.mkdir(exist_ok=True, mode=0o700)
        self.env = clean_env(self.home, env)
        # `launcher`: a command that runs the daemon for us (systemd-socket-activate), given its environment
        cmd = [*(launcher(self.env) if launcher is not None else ()), *zeroclaw_command(), "daemon"]
        if config_dir is not None:
            cmd += ["--config-dir", str(config_dir)]
        if no_gateway:
            cmd.append("--no-gateway")
        cmd += list(args)
        self.cmd = cmd
        self.stderr_lines: list[str] = []
        self._lock = threading.Lock()
        self._line_added = threading.Condition(self._lock)
        self._ready = threading.Event()
        self._eof = threading.Event()
        self.ready_line: str | None = None
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._reader = threading.Thread(target=self._drain, name=f"daemon-stderr-{self.proc.pid}", daemon=True)
        self._reader.start()

    # -- process ---------------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def data_dir(self) -> Path:
        assert self.config_dir is not None
        return self.config_dir / "data"

    @property
    def database_url(self) -> str:
        """The `[storage] url` of its config.toml, or the default SQLite file in its data dir."""
        assert self.config_dir is not None
        try:
            config = tomllib.loads((self.config_dir / "config.toml").read_text())
        except FileNotFoundError:
            config = {}
        url = config.get("storage", {}).get("url")
        return url if isinstance(url, str) else db_backend.default_url(self.data_dir)

    @property
    def socket_path(self) -> Path:
        if self.ready_line is not None:
            m = READY_RE.match(self.ready_line)
            assert m is not None
            return Path(m["socket"])
        if self.env.get("ZEROCLAW_SOCKET"):
            return Path(self.env["ZEROCLAW_SOCKET"])
        return self.data_dir / "daemon.sock"

    @property
    def audit_path(self) -> Path:
        return self.data_dir / "logs" / "audit.log"

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            with self._lock:
                self.stderr_lines.append(line)
                self._line_added.notify_all()
            if self.ready_line is None and READY_RE.match(line):
                self.ready_line = line
                self._ready.set()
        self._eof.set()
        with self._lock:
            self._line_added.notify_all()

    @property
    def stderr(self) -> str:
        with self._lock:
            return "\n".join(self.stderr_lines)

    def describe(self) -> str:
        return f"daemon pid={self.pid} rc={self.proc.poll()} cmd={self.cmd}\n--- stderr ---\n{self.stderr[-6000:]}"

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> Daemon:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None:
                self._eof.wait(2)
                raise DaemonFailed(f"daemon exited before it was ready\n{self.describe()}")
            if time.monotonic() > deadline:
                raise DaemonFailed(f"no readiness line within {timeout} s\n{self.describe()}")
        return self

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise DaemonFailed(f"daemon still running after {timeout} s\n{self.describe()}") from None
        self._eof.wait(2)
        return rc

    def is_running(self) -> bool:
        return self.proc.poll() is None

    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int:
        self.send_signal(sig)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        """Teardown: SIGTERM, then SIGKILL; never raises."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(STOP_TIMEOUT)
        self._reader.join(2)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    # -- observation -----------------------------------------------------------------------------------

    def proc_status(self, field: str) -> int:
        """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM), in bytes."""
        text = Path(f"/proc/{self.pid}/status").read_text()
        m = re.search(rf"^{field}:\s+(\d+) kB$", text, re.M)
        assert m is not None, text
        return int(m[1]) * 1024

    def audit_entries(self) -> list[dict[str, Any]]:
        try:
            text = self.audit_path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def audit_until(self, predicate: Any, timeout: float = RECV_TIMEOUT) -> list[dict[str, Any]]:
        """`wait_audit` for a test without an event loop: lines are written by the audit log's thread, a moment
        after the event."""
        try:
            return until_sync(lambda: self._audit_matched(predicate), timeout, interval=0.02)[0]
        except WaitTimeout:
            raise WaitTimeout(f"audit log never matched; entries: {self.audit_entries()}") from None

    async def wait_audit(self, predicate: Any, timeout: float = RECV_TIMEOUT) -> list[dict[str, Any]]:
        """Poll the audit log until `predicate(entries)` is true."""
        try:
            return (await until(lambda: self._audit_matched(predicate), timeout, interval=0.02))[0]
        except WaitTimeout:
            raise WaitTimeout(f"audit log never matched; entries: {self.audit_entries()}") from None

    def _audit_matched(self, predicate: Any) -> tuple[list[dict[str, Any]]] | None:
        """(entries,) once they match: a tuple, so that a match on no entries is still true."""
        entries = self.audit_entries()
        return (entries,) if predicate(entries) else None

    # -- stderr lines: the daemon's log, drained by a thread, so a line may trail the event it reports -------

    def stderr_mark(self) -> int:
        """A position in the daemon's stderr: pass it as `after` to wait for a line written from now on."""
        with self._lock:
            return len(self.stderr_lines)

    def _match(self, predicate: Callable[[str], Any] | str, after: int) -> str | None:
        """Under `_lock`."""
        test = predicate if callable(predicate) else (lambda line: predicate in line)
        return next((line for line in self.stderr_lines[after:] if test(line)), None)

    def _find_line(self, predicate: Callable[[str], Any] | str, after: int) -> str | None:
        with self._lock:
            found = self._match(predicate, after)
        if found is None and self._eof.is_set():
            with self._lock:  # the last lines may have come with the end
                found = self._match(predicate, after)
            if found is None:
                raise DaemonFailed(f"stderr ended before a line matched {predicate!r}\n{self.describe()}")
        return found

    def wait_stderr_sync(
        self, predicate: Callable[[str], Any] | str, timeout: float = RECV_TIMEOUT, *, after: int = 0
    ) -> str:
        """The first stderr line (from index `after`, see `stderr_mark`) that matches `predicate` (a callable, or
        a substring), woken by each new line; fails at once if the daemon's stderr ends first."""
        deadline = time.monotonic() + timeout
        while (found := self._find_line(predicate, after)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"no stderr line matched {predicate!r} within {timeout} s\n{self.describe()}")
            with self._lock:
                if self._match(predicate, after) is None and not self._eof.is_set():
                    self._line_added.wait(remaining)
        return found

    async def wait_stderr(
        self, predicate: Callable[[str], Any] | str, timeout: float = RECV_TIMEOUT, *, after: int = 0
    ) -> str:
        """`wait_stderr_sync` for a test with an event loop (polls what the thread collects)."""

        def found() -> tuple[str] | None:  # a tuple: an empty line that matches is still found
            line = self._find_line(predicate, after)
            return None if line is None else (line,)

        try:
            return (await until(found, timeout, interval=0.02))[0]
        except WaitTimeout:
            raise WaitTimeout(f"no stderr line matched {predicate!r} within {timeout} s\n{self.describe()}") from None

    async def connect(self, timeout: float = RECV_TIMEOUT) -> Client:
        return await Client.connect(self.socket_path, timeout=timeout)

    async def client(self, **init: Any) -> Client:
        """A connected client that has already called `initialize`."""
        c = await self.connect()
        await c.initialize(**init)
        return c


class DaemonFactory:
    """Starts daemons in fresh temp dirs; `close()` stops every one of them and removes the dirs."""

    def __init__(self) -> None:
        self.daemons: list[Daemon] = []
        self.roots: list[Path] = []
        # With `ZEROCLAW_TEST_DATABASE_URL` set (tests/db_backend.py): one fresh server database per config dir,
        # kept across restarts on that dir and dropped at close().
        self.databases: dict[Path, str] = {}

    def database_url(self, config_dir: Path) -> str | None:
        """The server database a config dir's daemons use, made on first use; None on the default SQLite."""
        if db_backend.server_url() is None:
            return None
        key = config_dir.absolute()
        if key not in self.databases:
            self.databases[key] = db_backend.fresh_database(key)
        return self.databases[key]

    def _with_database(
        self, config: str | Mapping[str, Mapping[str, Any]] | None, config_dir: Path
    ) -> str | Mapping[str, Mapping[str, Any]] | None:
        """On a test server, a config dir gets its database in config.toml: the first time it is written, and again
        whenever a test writes a new one (a test's own `[storage]` section wins)."""
        if config is None and (config_dir / "config.toml").exists():
            return None  # a restart on the dir: the file already names its database
        if STORAGE_SECTION.search(toml_config(config)):
            return config
        database = self.database_url(config_dir)
        return config if database is None else with_storage_url(config, database)

    def tmpdir(self) -> Path:
        # short paths: a Unix socket path must fit in 108 bytes
        root = Path(tempfile.mkdtemp(prefix="zc-e2e-", dir="/tmp"))
        self.roots.append(root)
        return root

    def spawn(
        self,
        config: str | Mapping[str, Mapping[str, Any]] | None = None,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        config_dir: Path | None = None,
        root: Path | None = None,
        use_config_dir: bool = True,
        no_gateway: bool = True,
        launcher: Callable[[Mapping[str, str]], Sequence[str]] | None = None,
    ) -> Daemon:
        """Start a daemon without waiting for readiness."""
        root = root or self.tmpdir()
        if use_config_dir and config_dir is None:
            config_dir = root / "cfg"
        if config_dir is not None:
            config = self._with_database(config, config_dir)
        if config is not None:
            assert config_dir is not None
            config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            (config_dir / "config.toml").write_text(toml_config(config))
        d = Daemon(root=root, config_dir=config_dir, args=args, env=env, no_gateway=no_gateway, launcher=launcher)
        self.daemons.append(d)
        return d

    def start(self, config: str | Mapping[str, Mapping[str, Any]] | None = None, **kw: Any) -> Daemon:
        """Start a daemon and wait for its readiness line."""
        return self.spawn(config, **kw).wait_ready()

    def close(self) -> None:
        for d in self.daemons:
            d.kill()
        for url in self.databases.values():
            db_backend.drop_database(url)
        self.databases.clear()
        for root in self.roots:
            shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ client


class ConnectionClosed(AssertionError):
    """The daemon closed the connection while a frame was expected."""


class RpcFailure(AssertionError):
    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response
        self.error: dict[str, Any] = response["error"]
        self.code: int = self.error.get("code")
        self.data: dict[str, Any] = self.error.get("data") or {}
        super().__init__(f"JSON-RPC error {self.error}")


class Client:
    """A minimal NDJSON JSON-RPC client; every wait has a timeout."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._ids = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []
        self._backlog: list[dict[str, Any]] = []  # frames read by `wait_notification` that `recv` returns next
        self._recorder = wire_recorder.for_connection()  # off unless ZEROCLAW_RECORD_WIRE is set

    @classmethod
    async def connect(cls, path: Path | str, timeout: float = RECV_TIMEOUT) -> Client:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(path), limit=4 * DEFAULT_FRAME_LIMIT), timeout
        )
        return cls(reader, writer)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- sending ---------------------------------------------------------------------------------------

    async def send_raw(self, data: bytes, timeout: float = RECV_TIMEOUT) -> None:
        if self._recorder is not None:
            self._recorder.sent(data)
        self.writer.write(data)
        await asyncio.wait_for(self.writer.drain(), timeout)

    async def send(self, obj: Any, timeout: float = RECV_TIMEOUT) -> None:
        await self.send_raw(json.dumps(obj, separators=(",", ":")).encode() + b"\n", timeout)

    def next_id(self) -> int:
        return next(self._ids)

    # -- receiving -------------------------------------------------------------------------------------

    async def recv_line(self, timeout: float = RECV_TIMEOUT) -> bytes:
        try:
            line = await asyncio.wait_for(self.reader.readline(), timeout)
        except TimeoutError:
            raise AssertionError(f"no frame from the daemon within {timeout} s") from None
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ConnectionClosed(f"connection reset: {exc}") from None
        if not line:
            raise ConnectionClosed("the daemon closed the connection")
        assert line.endswith(b"\n"), f"frame without newline: {line[:200]!r}"
        return line

    async def recv(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        if self._backlog:
            return self._backlog.pop(0)
        line = await self.recv_line(timeout)
        obj = json.loads(line)
        assert isinstance(obj, dict), obj
        assert obj.get("jsonrpc") == "2.0", obj
        self.saw(obj)
        return obj

    def saw(self, frame: Any) -> None:
        """A frame read from the daemon (by `recv`, or by a reader of its own): recorded when recording."""
        if self._recorder is not None and isinstance(frame, dict):
            self._recorder.received(frame)

    async def recv_response(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        """The next frame that is not a notification (notifications are kept in `self.notifications`)."""
        deadline = time.monotonic() + timeout
        while True:
            obj = await self.recv(max(0.01, deadline - time.monotonic()))
            if "method" in obj and "id" not in obj:
                self.notifications.append(obj)
                continue
            return obj

    async def wait_notification(
        self, predicate: Callable[[dict[str, Any]], Any] | str, timeout: float = RECV_TIMEOUT, *, start: int = 0
    ) -> dict[str, Any]:
        """The first notification (from index `start` of `self.notifications`, where every notification read is
        kept) that matches `predicate`: a callable of the frame, or a method name. Other frames read meanwhile
        (responses, the daemon's requests) are kept, in order, for the next `recv`."""
        test = predicate if callable(predicate) else (lambda frame: frame.get("method") == predicate)
        deadline = time.monotonic() + timeout
        index = start
        while True:
            for frame in self.notifications[index:]:
                if test(frame):
                    return frame
            index = len(self.notifications)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"no notification matched {predicate!r} within {timeout} s")
            line = await self.recv_line(remaining)
            frame = json.loads(line)
            assert isinstance(frame, dict) and frame.get("jsonrpc") == "2.0", frame
            self.saw(frame)
            if "method" in frame and "id" not in frame:
                self.notifications.append(frame)
            else:
                self._backlog.append(frame)

    async def expect_eof(self, timeout: float = RECV_TIMEOUT) -> list[bytes]:
        """Wait until the daemon closes the connection; return any frames that came before."""
        frames: list[bytes] = []
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"connection still open after {timeout} s (frames: {frames!r})")
            try:
                line = await asyncio.wait_for(self.reader.readline(), remaining)
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return frames
            if not line:
                return frames
            frames.append(line)

    async def expect_silence(self, seconds: float) -> None:
        """Assert that no frame arrives for `seconds`."""
        assert not self._backlog, f"unexpected frame: {self._backlog[0]}"
        try:
            line = await asyncio.wait_for(self.reader.readline(), seconds)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected frame: {line[:300]!r}")

    # -- calls -----------------------------------------------------------------------------------------

    async def request(
        self, method: str, params: Any = None, *, id: Any = ..., timeout: float = RECV_TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and return the whole response frame (skipping notifications)."""
        rid = self.next_id() if id is ... else id
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
        if params is not None:
            frame["params"] = params
        await self.send(frame)
        response = await self.recv_response(timeout)
        assert response.get("id") == rid, f"expected the answer to id {rid!r}, got {response}"
        return response

    async def call(self, method: str, params: Any = None, *, timeout: float = RECV_TIMEOUT) -> Any:
        """`request` that returns the result or raises `RpcFailure`."""
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            raise RpcFailure(response)
        assert "result" in response, response
        return response["result"]

    async def notify(self, method: str, params: Any = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        await self.send(frame)

    async def initialize(self, **params: Any) -> dict[str, Any]:
        params.setdefault("protocolVersion", 1)
        return await self.call("initialize", params)

    async def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2)


def error_of(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(code, data) of an error response; fails if it is not one."""
    assert "error" in response and "result" not in response, response
    err = response["error"]
    assert set(err) <= {"code", "message", "data"}, err
    assert isinstance(err["code"], int), err
    assert isinstance(err["message"], str), err
    data = err.get("data")
    assert isinstance(data, dict) and isinstance(data.get("kind"), str), err
    return err["code"], data


class RawClient:
    """A blocking socket for bulk sends: keeps reading what the daemon sent even after it closed on us."""

    def __init__(self, path: Path | str, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buffer = b""
        self.peer_closed = False

    def send_all(self, data: bytes, chunk: int = 1024 * 1024, on_chunk: Any = None) -> int:
        """Send `data`; stop quietly when the daemon closes the connection. Returns the bytes sent."""
        sent = 0
        for i in range(0, len(data), chunk):
            try:
                self.sock.sendall(data[i : i + chunk])
            except (BrokenPipeError, ConnectionResetError):
                self.peer_closed = True
                break
            sent += len(data[i : i + chunk])
            if on_chunk is not None:
                on_chunk(sent)
        return sent

    def recv_frame(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                raise AssertionError(f"no frame from the daemon within {timeout} s") from None
            if not data:
                raise ConnectionClosed("the daemon closed the connection")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def read_until_eof(self, timeout: float = RECV_TIMEOUT) -> list[dict[str, Any]]:
        """Every frame the daemon sends until it closes the connection."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"connection still open after {timeout} s (buffer: {self.buffer[:300]!r})")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                data = b""
            if not data:
                break
            self.buffer += data
        return [json.loads(line) for line in self.buffer.split(b"\n") if line.strip()]

    def initialize(self) -> dict[str, Any]:
        self.sock.sendall(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":"init"}\n')
        frame = self.recv_frame()
        assert frame.get("id") == "init" and "result" in frame, frame
        return frame

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
