"""Socket activation (R-SVC-1) with the real daemon: Debian's `systemd-socket-activate` binds the sockets and execs
`zeroclaw daemon` (same pid) on the first connect, as a `zeroclaw.socket` unit would have systemd do.

`systemd-socket-activate` passes only the variables it is told (`-E NAME`), and creates the socket with its own
mode; the test, standing in for `SocketMode=0600`, sets 0600 before the first connect, so "the daemon never
chmods it" is visible. Re-activation after an on-demand daemon's exit needs a manager that keeps the listening
socket (systemd does; `systemd-socket-activate` execs itself away): `Activator` below is that manager, in Python.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import httpx
import pytest
from e2e_harness import Client, Daemon, DaemonFactory, clean_env, zeroclaw_command
from waiting import until_sync

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix sockets and systemd's protocol")

SSA = shutil.which("systemd-socket-activate") or "/usr/bin/systemd-socket-activate"
START_TIMEOUT = 20.0  # first connect → answered initialize includes the daemon's whole start


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def activate(*listen: str, fdnames: str | None = None) -> Callable[[Mapping[str, str]], Sequence[str]]:
    """The `launcher` for `DaemonFactory.spawn`: systemd-socket-activate with every variable the harness set."""

    def command(env: Mapping[str, str]) -> list[str]:
        argv = [SSA, *(f"--listen={address}" for address in listen)]
        if fdnames is not None:
            argv.append(f"--fdname={fdnames}")
        for name in sorted(env):
            argv += ["-E", name]  # NAME alone: the value from systemd-socket-activate's own environment
        return argv

    return command


def private_dir(config_dir: Path) -> Path:
    """The endpoint's directory, 0700, made as systemd's DirectoryMode=0700 would."""
    data = config_dir / "data"
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(config_dir, 0o700)
    os.chmod(data, 0o700)
    return data


def wait_listening(path: Path, d: Daemon, timeout: float = 10.0) -> os.stat_result:
    """The socket systemd-socket-activate bound, set to 0600 (the unit's SocketMode=); its stat."""
    d.wait_stderr_sync("Listening on", timeout)  # systemd-socket-activate's line; fails at once if it exits
    until_sync(path.exists, timeout, what=f"{path} to appear")
    os.chmod(path, 0o600)
    return os.stat(path)


def same_file(before: os.stat_result, path: Path) -> None:
    after = os.stat(path)
    assert stat.S_ISSOCK(after.st_mode)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino), "the socket was replaced"
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode) == 0o600, oct(after.st_mode)


async def first_call(path: Path) -> tuple[Client, dict[str, object], dict[str, object]]:
    """Connect (the daemon starts now), initialize, status: what the activated daemon says."""
    client = await Client.connect(path)
    init = await client.request("initialize", {"protocolVersion": 1}, timeout=START_TIMEOUT)
    assert "result" in init, init
    status = await client.call("status")
    return client, init["result"], status


@pytest.mark.req("R-SVC-1")
async def test_first_connect_starts_the_daemon_on_the_passed_sockets_and_sigterm_leaves_the_path(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    sock = private_dir(config_dir) / "daemon.sock"
    port = free_port()
    d = daemon_factory.spawn(
        config_dir=config_dir,
        root=root,
        no_gateway=False,
        launcher=activate(str(sock), f"127.0.0.1:{port}", fdnames="rpc:gateway"),
    )
    before = wait_listening(sock, d)
    await asyncio.sleep(0.3)  # a window in which a daemon that did not wait for a connection would start
    assert "zeroclaw daemon ready" not in d.stderr, "started before anyone connected"

    client = await Client.connect(sock)
    init = await client.request("initialize", {"protocolVersion": 1}, timeout=START_TIMEOUT)
    assert "result" in init, init
    status = await client.call("status")
    # systemd-socket-activate execs the daemon in its own process: the pid it was started as
    assert init["result"]["serverPid"] == status["pid"] == d.pid
    assert status["endpoint"] == str(sock)
    assert status["gateway"] == {"url": f"http://127.0.0.1:{port}"}
    d.wait_ready()
    assert d.ready_line == f"zeroclaw daemon ready: socket={sock} gateway=http://127.0.0.1:{port}"

    async with httpx.AsyncClient(trust_env=False) as http:
        health = await http.get(f"http://127.0.0.1:{port}/health")
    assert health.status_code == 200, health.text

    same_file(before, sock)
    await client.close()
    assert d.stop(signal.SIGTERM) == 0, d.describe()
    same_file(before, sock)  # left in place for the next activation, not unlinked, re-bound or chmod-ed
    assert "LISTEN" not in d.stderr.split("Execing", 1)[-1]  # no complaint about the variables


@pytest.mark.req("R-SVC-1")
async def test_an_unnamed_socket_is_placed_by_its_family(daemon_factory: DaemonFactory) -> None:
    """No LISTEN_FDNAMES (a unit without FileDescriptorName=): the AF_UNIX socket is the local endpoint."""
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    sock = private_dir(config_dir) / "daemon.sock"
    d = daemon_factory.spawn(config_dir=config_dir, root=root, launcher=activate(str(sock)))
    before = wait_listening(sock, d)
    client, _init, status = await first_call(sock)
    assert status["pid"] == d.pid and status["endpoint"] == str(sock)
    await client.close()
    assert d.stop() == 0
    same_file(before, sock)


@pytest.mark.req("R-SVC-1")
async def test_on_demand_daemon_exits_after_the_last_client_and_leaves_the_socket(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    sock = private_dir(config_dir) / "daemon.sock"
    (config_dir / "config.toml").write_text("[daemon]\nephemeral_grace_secs = 0.3\n")
    d = daemon_factory.spawn(config_dir=config_dir, root=root, args=["--ephemeral"], launcher=activate(str(sock)))
    before = wait_listening(sock, d)
    client, _init, status = await first_call(sock)
    assert status["pid"] == d.pid
    await asyncio.sleep(0.6)  # twice the grace: a daemon that did not count this client would have gone
    assert d.is_running(), "exited while a client was connected"
    await client.close()
    assert d.wait_exit(5.0) == 0, d.describe()
    same_file(before, sock)


@pytest.mark.req("R-SVC-1")
async def test_activated_daemon_exits_naming_the_live_daemon_that_holds_the_endpoint(
    daemon_factory: DaemonFactory,
) -> None:
    """A daemon started by hand holds the endpoint lock; systemd then binds the same path anew (it unlinks what
    is there). The daemon it starts takes the lock, finds it held, and says whose it is."""
    first = daemon_factory.start()
    assert first.config_dir is not None
    sock = first.socket_path
    d = daemon_factory.spawn(config_dir=first.config_dir, root=daemon_factory.tmpdir(), launcher=activate(str(sock)))
    wait_listening(sock, d)
    client = await Client.connect(sock)
    with contextlib.suppress(Exception):
        await client.send({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 1})
    assert d.wait_exit(START_TIMEOUT) == 1
    assert f"another daemon (pid {first.pid}) already serves {sock}" in d.stderr, d.describe()
    await client.close()
    assert first.is_running()


@pytest.mark.req("R-SVC-1")
@pytest.mark.parametrize(
    ("listen", "fdnames", "message"),
    [
        (["127.0.0.1:{port}"], "rpc", "fd 3 is named rpc but is an AF_INET socket, not a Unix socket"),
        (["{sock}", "{sock2}"], "rpc:rpc", "two sockets for rpc: fd 3 and fd 4"),
    ],
)
async def test_sockets_that_cannot_serve_are_refused_in_one_line(
    daemon_factory: DaemonFactory, listen: list[str], fdnames: str, message: str
) -> None:
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    data = private_dir(config_dir)
    port = free_port()
    addresses = [a.format(port=port, sock=data / "daemon.sock", sock2=data / "other.sock") for a in listen]
    d = daemon_factory.spawn(config_dir=config_dir, root=root, launcher=activate(*addresses, fdnames=fdnames))
    d.wait_stderr_sync("Listening on", 10)
    with _connect(addresses[0]):  # the first connect starts the daemon
        assert d.wait_exit(START_TIMEOUT) == 1
    assert f"zeroclaw daemon: socket activation: {message}" in d.stderr.splitlines(), d.describe()
    assert "Traceback" not in d.stderr


def _connect(address: str) -> socket.socket:
    if address.startswith("/"):
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.connect(address)
        return unix
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)))


# ----------------------------------------------------------------------- re-activation: a manager that keeps it


class Activator:
    """What systemd does for a `zeroclaw.socket` (Accept=no): holds the listening socket; when it is readable and
    no daemon runs, starts one with the socket as fd 3 (LISTEN_FDS=1, LISTEN_FDNAMES=rpc, LISTEN_PID=its pid)."""

    def __init__(self, path: Path, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        self.sock.listen(64)
        self.argv, self.env = list(argv), dict(env)
        self.started: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="activator", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import select

        fd = self.sock.fileno()
        # LISTEN_PID must be the daemon's own pid: this trampoline knows it and keeps it through exec
        trampoline = (
            "import os, sys; fd = int(sys.argv[1]); os.dup2(fd, 3); fd != 3 and os.close(fd); "
            "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1', LISTEN_FDNAMES='rpc'); "
            "os.execvp(sys.argv[2], sys.argv[2:])"
        )
        while not self._stop.is_set():
            readable, _, _ = select.select([self.sock], [], [], 0.05)
            if not readable:
                continue
            log = self.env["HOME"] + f"/daemon-{len(self.started)}.log"
            self.logs.append(Path(log))
            with open(log, "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-c", trampoline, str(fd), *self.argv],
                    env=self.env,
                    pass_fds=(fd,),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
            self.started.append(proc)
            while proc.poll() is None and not self._stop.is_set():
                time.sleep(0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.sock.close()


@pytest.mark.req("R-SVC-1")
async def test_on_demand_daemon_is_started_again_by_the_next_connect(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    sock = private_dir(config_dir) / "daemon.sock"
    (config_dir / "config.toml").write_text("[daemon]\nephemeral_grace_secs = 0.3\n")
    home = root / "home"
    home.mkdir(mode=0o700)
    argv = [*zeroclaw_command(), "daemon", "--config-dir", str(config_dir), "--no-gateway", "--ephemeral"]
    activator = Activator(sock, argv, clean_env(home))
    try:
        before = os.stat(sock)
        pids = []
        for round_ in range(2):
            client, _init, status = await first_call(sock)
            pids.append(status["pid"])
            await client.close()
            proc = activator.started[round_]
            assert proc.pid == status["pid"]
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(proc.wait, 5)  # the on-demand daemon exits after its last client
            assert proc.returncode == 0, activator.logs[round_].read_text()
            same_file(before, sock)
        assert pids[0] != pids[1]
        assert len(activator.started) == 2
    finally:
        activator.close()


@pytest.mark.req("R-SVC-1")
@pytest.mark.req("R-SEC-1")
def test_the_documented_try_it_without_systemd_block_leaves_the_socket_0600(daemon_factory: DaemonFactory) -> None:
    """issue 38 §5.10: docs/operations.md's block, run as written (its gateway port swapped for a free one, HOME a
    temp dir): the socket systemd-socket-activate made 0644 is 0600 before the first connect, which starts the
    daemon."""
    from e2e_harness import REPO_ROOT

    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    block = text[text.index("Try it without systemd") :].split("```sh\n", 1)[1].split("```", 1)[0]
    assert "chmod 600 ~/.zeroclaw/data/daemon.sock" in block
    root = daemon_factory.tmpdir()
    home = root / "home"
    home.mkdir(mode=0o700)
    env = clean_env(home)
    env["PATH"] = f"{Path(zeroclaw_command()[0]).parent}{os.pathsep}{env.get('PATH', '')}"
    script = block.replace("127.0.0.1:42617", f"127.0.0.1:{free_port()}")
    sock = home / ".zeroclaw" / "data" / "daemon.sock"
    lock = Path(f"{sock}.lock")
    try:
        done = subprocess.run(["bash", "-ec", script], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert '"pid"' in done.stdout, done.stdout  # `zeroclaw status` answered: the connect started the daemon
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600, oct(os.stat(sock).st_mode)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(lock.read_text().strip()), signal.SIGTERM)  # the daemon (it exits by itself too)
