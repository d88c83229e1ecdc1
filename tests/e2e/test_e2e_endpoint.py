"""The local endpoint on disk: paths, permissions, single owner, stale sockets, shutdown (R-PATH, R-SEC-1/2)."""

from __future__ import annotations

import os
import signal
import socket
import stat
import time
from pathlib import Path

import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def make_stale_socket(path: Path) -> int:
    """A socket file nobody listens on; returns its inode."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    return os.lstat(path).st_ino


def can_connect(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(str(path))
    except OSError:
        return False
    finally:
        s.close()
    return True


def assert_refused_to_start(d: Daemon, *needles: str, timeout: float = 10.0) -> str:
    rc = d.wait_exit(timeout)
    assert rc != 0, d.describe()
    assert d.ready_line is None, d.describe()
    for needle in needles:
        assert needle in d.stderr, f"{needle!r} not in stderr\n{d.describe()}"
    return d.stderr


# ------------------------------------------------------------------------------------------ R-SEC-1


@pytest.mark.req("R-SEC-1")
async def test_socket_is_0600_and_data_dir_0700(shared_daemon: Daemon) -> None:
    sock = shared_daemon.socket_path
    assert sock == shared_daemon.data_dir / "daemon.sock"
    assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert mode(sock) == 0o600
    assert mode(shared_daemon.data_dir) == 0o700


@pytest.mark.req("R-SEC-1")
@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
async def test_directories_the_daemon_creates_are_0700(daemon_factory: DaemonFactory, umask: int) -> None:
    root = daemon_factory.tmpdir()
    cfg = root / "new" / "cfg"  # neither exists
    old_umask = os.umask(umask)  # inherited by the daemon
    try:
        d = daemon_factory.start(config_dir=cfg, root=root)
    finally:
        os.umask(old_umask)
    assert mode(cfg) == 0o700
    assert mode(d.data_dir) == 0o700
    assert mode(d.socket_path) == 0o600


@pytest.mark.req("R-SEC-1")
async def test_existing_data_dir_is_tightened_to_0700(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    data = root / "cfg" / "data"
    data.mkdir(parents=True)
    os.chmod(data, 0o755)
    d = daemon_factory.start(config_dir=root / "cfg", root=root)
    assert mode(d.data_dir) == 0o700


@pytest.mark.req("R-SEC-1")
async def test_a_config_dir_the_user_made_0755_stays_0755(daemon_factory: DaemonFactory) -> None:
    """The story: a config dir created by the user with mode 0755 was 0700 after start. Only the data dir is
    tightened; the config dir, its parents and a `ZEROCLAW_SOCKET` directory the user made are left alone."""
    root = daemon_factory.tmpdir()
    os.chmod(root, 0o755)
    cfg = root / "cfg"
    cfg.mkdir()
    os.chmod(cfg, 0o755)
    (cfg / "data").mkdir()
    os.chmod(cfg / "data", 0o755)
    sockets = root / "sockets"
    sockets.mkdir()
    os.chmod(sockets, 0o755)
    d = daemon_factory.start(config_dir=cfg, root=root, env={"ZEROCLAW_SOCKET": str(sockets / "zc.sock")})
    assert mode(root) == 0o755
    assert mode(cfg) == 0o755
    assert mode(d.data_dir) == 0o700
    assert mode(sockets) == 0o755
    assert mode(d.socket_path) == 0o600
    async with await d.connect() as c:
        await c.initialize()
    assert d.stop() == 0
    assert mode(cfg) == 0o755


@pytest.mark.req("R-SEC-1")
async def test_zeroclaw_socket_in_a_sticky_shared_dir_leaves_the_dir_alone(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    shared = root / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    sock = shared / "zc.sock"
    d = daemon_factory.start(root=root, env={"ZEROCLAW_SOCKET": str(sock)})
    assert d.socket_path == sock
    assert mode(shared) == 0o1777
    assert mode(sock) == 0o600
    async with await d.connect() as c:
        await c.initialize()


@pytest.mark.req("R-SEC-1")
async def test_zeroclaw_socket_parent_created_0700(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    sock = root / "made" / "by" / "daemon" / "zc.sock"
    d = daemon_factory.start(root=root, env={"ZEROCLAW_SOCKET": str(sock)})
    assert d.socket_path == sock
    assert mode(sock.parent) == 0o700
    assert mode(sock) == 0o600


# ------------------------------------------------------------------------------------------ R-SEC-2


@pytest.mark.req("R-SEC-2")
@pytest.mark.parametrize("dir_mode", [0o777, 0o770, 0o757], ids=["world-writable", "group-writable", "o+w"])
async def test_writable_non_sticky_endpoint_dir_is_refused(daemon_factory: DaemonFactory, dir_mode: int) -> None:
    root = daemon_factory.tmpdir()
    shared = root / "open"
    shared.mkdir()
    os.chmod(shared, dir_mode)
    sock = shared / "zc.sock"
    d = daemon_factory.spawn(root=root, env={"ZEROCLAW_SOCKET": str(sock)})
    assert_refused_to_start(d, str(shared))
    assert not sock.exists()
    assert mode(shared) == dir_mode  # never chmod-ed


@pytest.mark.req("R-SEC-2")
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown needs root")
async def test_endpoint_dir_owned_by_another_user_is_refused(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    os.chmod(root, 0o755)
    theirs = root / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    sock = theirs / "zc.sock"
    d = daemon_factory.spawn(root=root, env={"ZEROCLAW_SOCKET": str(sock)})
    assert_refused_to_start(d, str(theirs))
    assert not sock.exists()


# ------------------------------------------------------------------------------------------ R-PATH


@pytest.mark.req("R-PATH-1")
@pytest.mark.req("R-PATH-3")
async def test_default_endpoint_under_home(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(use_config_dir=False)
    expected = d.home / ".zeroclaw" / "data" / "daemon.sock"
    assert d.socket_path == expected
    assert stat.S_ISSOCK(os.lstat(expected).st_mode)


@pytest.mark.req("R-PATH-1")
async def test_config_dir_from_env(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    cfg = root / "envcfg"
    d = daemon_factory.start(root=root, use_config_dir=False, env={"ZEROCLAW_CONFIG_DIR": str(cfg)})
    assert d.socket_path == cfg / "data" / "daemon.sock"


@pytest.mark.req("R-PATH-3")
async def test_zeroclaw_socket_overrides_the_endpoint(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    sock = root / "custom.sock"
    d = daemon_factory.start(root=root, env={"ZEROCLAW_SOCKET": str(sock)})
    assert d.socket_path == sock
    assert not (d.data_dir / "daemon.sock").exists()
    async with await d.client() as c:
        status = await c.call("status")
    assert status["endpoint"] == str(sock)


@pytest.mark.req("R-PATH-4")
async def test_second_daemon_on_the_same_dir_exits_quickly_naming_endpoint_and_pid(
    daemon_factory: DaemonFactory,
) -> None:
    first = daemon_factory.start()
    inode = os.lstat(first.socket_path).st_ino
    started = time.monotonic()
    second = daemon_factory.spawn(config_dir=first.config_dir, root=first.root)
    rc = second.wait_exit(10)
    elapsed = time.monotonic() - started
    assert rc != 0, second.describe()
    assert elapsed < 2.0, f"second daemon took {elapsed:.2f} s to give up"
    assert second.ready_line is None
    message = [line for line in second.stderr_lines if str(first.socket_path) in line]
    assert message, second.describe()
    assert any(str(first.pid) in line for line in message), second.describe()
    # the live socket is untouched and still served by the first daemon
    assert os.lstat(first.socket_path).st_ino == inode
    assert first.is_running()
    async with await first.connect() as c:
        await c.initialize()


@pytest.mark.req("R-PATH-4")
async def test_lock_file_holds_the_owner_pid_and_is_0600(shared_daemon: Daemon) -> None:
    lock = Path(str(shared_daemon.socket_path) + ".lock")
    assert lock.is_file() and not lock.is_symlink()
    assert mode(lock) == 0o600
    assert str(shared_daemon.pid) in lock.read_text()


@pytest.mark.req("R-PATH-4")
async def test_second_daemon_with_the_same_zeroclaw_socket_is_refused(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    sock = root / "one.sock"
    first = daemon_factory.start(root=root, config_dir=root / "a", env={"ZEROCLAW_SOCKET": str(sock)})
    second = daemon_factory.spawn(root=root, config_dir=root / "b", env={"ZEROCLAW_SOCKET": str(sock)})
    assert_refused_to_start(second, str(sock), str(first.pid))
    assert can_connect(sock)


@pytest.mark.req("R-PATH-5")
async def test_stale_socket_is_replaced(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    data = root / "cfg" / "data"
    data.mkdir(parents=True, mode=0o700)
    sock = data / "daemon.sock"
    stale_inode = make_stale_socket(sock)
    os.link(sock, root / "stale-keep")  # pins the inode, so a new socket cannot reuse its number
    assert not can_connect(sock)
    d = daemon_factory.start(config_dir=root / "cfg", root=root)
    assert can_connect(sock)
    assert d.socket_path == sock
    assert os.lstat(sock).st_ino != stale_inode
    assert mode(sock) == 0o600
    async with await d.connect() as c:
        await c.initialize()


@pytest.mark.req("R-PATH-5")
@pytest.mark.parametrize("kind", ["regular-file", "directory", "symlink"])
async def test_non_socket_at_the_endpoint_is_refused_and_left_alone(daemon_factory: DaemonFactory, kind: str) -> None:
    root = daemon_factory.tmpdir()
    data = root / "cfg" / "data"
    data.mkdir(parents=True, mode=0o700)
    sock = data / "daemon.sock"
    target = root / "precious.txt"
    target.write_text("keep me")
    if kind == "regular-file":
        sock.write_text("keep me")
    elif kind == "directory":
        sock.mkdir()
        (sock / "inside").write_text("keep me")
    else:
        sock.symlink_to(target)
    before = os.lstat(sock)
    d = daemon_factory.spawn(config_dir=root / "cfg", root=root)
    assert_refused_to_start(d, str(sock))
    after = os.lstat(sock)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert target.read_text() == "keep me"
    if kind == "regular-file":
        assert sock.read_text() == "keep me"
    if kind == "directory":
        assert (sock / "inside").read_text() == "keep me"


@pytest.mark.req("R-PATH-6")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_signal_removes_the_socket_and_exits_0(daemon_factory: DaemonFactory, sig: int) -> None:
    d = daemon_factory.start()
    sock = d.socket_path
    async with await d.connect() as c:
        await c.initialize()
        rc = d.stop(sig)
        assert rc == 0, d.describe()
        assert not os.path.lexists(sock)
        # connections are closed on shutdown
        await c.expect_eof(timeout=2)


@pytest.mark.req("R-PATH-6")
async def test_shutdown_does_not_remove_a_socket_that_is_no_longer_its_own(daemon: Daemon) -> None:
    sock = daemon.socket_path
    os.link(sock, daemon.root / "old-keep")  # pins the daemon's inode, so the replacement gets another one
    os.unlink(sock)
    replacement_inode = make_stale_socket(sock)
    assert daemon.stop() == 0, daemon.describe()
    assert os.path.lexists(sock)
    assert os.lstat(sock).st_ino == replacement_inode


@pytest.mark.req("R-PATH-6")
async def test_restart_after_clean_shutdown(daemon_factory: DaemonFactory) -> None:
    first = daemon_factory.start()
    assert first.stop() == 0
    second = daemon_factory.start(config_dir=first.config_dir, root=first.root)
    async with await second.connect() as c:
        await c.initialize()


@pytest.mark.req("R-PATH-7")
async def test_readiness_line_format_and_the_socket_is_ready_when_it_is_printed(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.spawn()
    d.wait_ready()
    # checked immediately after the line: accepts connections, final permissions
    assert can_connect(d.data_dir / "daemon.sock")
    assert mode(d.data_dir / "daemon.sock") == 0o600
    assert d.ready_line == f"zeroclaw daemon ready: socket={d.data_dir / 'daemon.sock'} gateway=off"
    ready_lines = [line for line in d.stderr_lines if READY_RE.match(line)]
    assert ready_lines == [d.ready_line]
    assert d.stderr_lines.count(d.ready_line) == 1
