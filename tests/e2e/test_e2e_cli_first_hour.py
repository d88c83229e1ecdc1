"""The first hour, tried as a new user would (issue 29 §4): each thing a newcomer met, as a subprocess against a
real daemon. The interactive ones (prompts, Ctrl-C) are in test_e2e_cli_pty.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import READY_RE, REPO_ROOT, Daemon, DaemonFactory, clean_env, zeroclaw_command

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

WAIT = 10.0


@pytest.fixture(scope="module")
def first_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start()
    finally:
        factory.close()


def run(
    d: Daemon, *args: str, stdin: str = "", stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*zeroclaw_command(), *args, "--config-dir", str(d.config_dir)],
        cwd=REPO_ROOT,
        env=d.env,
        input=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=30,
        check=False,
    )


def start_failure(d: Daemon) -> str:
    """The one line a daemon that cannot start prints."""
    assert d.wait_exit(20) == 1, d.describe()
    assert "Traceback" not in d.stderr, d.describe()
    lines = [line for line in d.stderr_lines if line.startswith("zeroclaw daemon: ")]
    assert len(lines) == 1, d.describe()
    return lines[0]


# -- §4.1 ---------------------------------------------------------------------------------------------------------


@pytest.mark.req("R-CFG-5")
def test_a_toml_error_says_where_and_what(daemon_factory: DaemonFactory) -> None:
    """issue 29 §4.1: `invalid TOML at line 1, column 8` alone did not say what was wrong."""
    d = daemon_factory.spawn("[limits\nmax_sessions = 1\n")
    line = start_failure(d)
    reason = "Expected ']' at the end of a table declaration"
    assert line.endswith(f"config.toml: invalid TOML at line 1, column 8: {reason}"), line


# -- §4.2 ---------------------------------------------------------------------------------------------------------


@pytest.mark.req("R-GW-1")
def test_a_second_instance_on_the_gateway_port_says_how_to_run_beside_it(daemon_factory: DaemonFactory) -> None:
    """issue 29 §4.2: a second daemon (another `--config-dir`) on the default port of the first one says that the
    port is in use and how to run both, in one line, and exits 1."""
    first = daemon_factory.start(args=["--gateway-port", "0"], no_gateway=False)
    match = READY_RE.match(first.ready_line or "")
    assert match is not None, first.describe()
    port = int(match["gateway"].rsplit(":", 1)[1])
    second = daemon_factory.spawn(args=["--gateway-port", str(port)], no_gateway=False)
    line = start_failure(second)
    assert line == (
        f"zeroclaw daemon: the gateway cannot listen on 127.0.0.1:{port}: the port is in use (another zeroclaw "
        "daemon?); start this one with `--gateway-port 0` (any free port) or `--no-gateway`, or set [gateway] port"
    )
    assert not second.socket_path.exists()  # it cleaned up what it had started
    assert first.is_running()


@pytest.mark.req("R-EPH-3")
def test_an_ephemeral_daemon_takes_a_free_port_when_its_gateway_port_is_taken(daemon_factory: DaemonFactory) -> None:
    """issue 38 §5.1: the daemon a client starts for itself (`--ephemeral`, no `--gateway-port`) comes up beside a
    daemon holding its configured port, on a free one, and says so; one started by hand with that port still fails
    (the test above)."""
    first = daemon_factory.start(args=["--gateway-port", "0"], no_gateway=False)
    match = READY_RE.match(first.ready_line or "")
    assert match is not None, first.describe()
    port = int(match["gateway"].rsplit(":", 1)[1])
    second = daemon_factory.start({"gateway": {"port": port}}, args=["--ephemeral"], no_gateway=False)
    match = READY_RE.match(second.ready_line or "")
    assert match is not None, second.describe()
    assert int(match["gateway"].rsplit(":", 1)[1]) not in (port, 0), second.ready_line
    assert any(f"the gateway port {port} is in use" in line for line in second.stderr_lines), second.describe()


def test_readme_says_how_to_run_a_second_instance() -> None:
    """issue 29 §4.2: the README names the two ways out, where it tells about `--config-dir`."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert "--gateway-port 0" in readme and "--no-gateway" in readme.split("## Test it", 1)[0]


# -- §4.5 ---------------------------------------------------------------------------------------------------------


def closed_pipe() -> int:
    """The write end of a pipe whose reader is gone, as `| head` leaves it once head has exited."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@pytest.mark.req("R-CLI")
@pytest.mark.parametrize("stdin", [None, "status\nsession/list {}\n"], ids=["one-shot", "interactive"])
def test_rpc_to_a_closed_stdout_leaves_quietly(first_daemon: Daemon, stdin: str | None) -> None:
    """issue 29 §4.5: `zeroclaw rpc … | head` blamed the daemon; now it leaves as `cat` does: nothing on stderr,
    status 141 (128 + SIGPIPE, what a shell shows for `cat` in the same place)."""
    args = ("rpc", "status") if stdin is None else ("rpc",)
    write_end = closed_pipe()
    try:
        proc = run(first_daemon, *args, stdin=stdin or "", stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


@pytest.mark.req("R-CLI")
def test_chat_session_with_an_unknown_id_says_so_and_creates_nothing(first_daemon: Daemon) -> None:
    """issue 38 §5.3: `zeroclaw chat --session s_typo` silently made an empty session with that id; now it says that
    none has that id, how to list yours and how to create one on purpose (`--create`), and exits 2."""
    proc = run(first_daemon, "chat", "--session", "s_typo")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    flag = f"--config-dir {first_daemon.config_dir}"
    assert proc.stderr.strip() == (
        f"zeroclaw: no session has the id s_typo; `zeroclaw rpc {flag} session/list` lists yours, "
        f"`zeroclaw chat {flag} --session s_typo --create` creates one with that id"
    )
    listed = json.loads(run(first_daemon, "rpc", "session/list").stdout)["sessions"]
    assert "s_typo" not in [s["sessionId"] for s in listed]
    created = run(first_daemon, "chat", "--session", "s_typo", "--create")
    assert created.returncode == 0 and created.stdout.startswith("session s_typo (new"), created
    resumed = run(first_daemon, "chat", "--session", "s_typo")
    assert resumed.returncode == 0 and resumed.stdout.startswith("session s_typo (resumed"), resumed


@pytest.mark.req("R-CLI")
def test_chat_to_a_closed_stdout_leaves_quietly(first_daemon: Daemon) -> None:
    """issue 38 §5.5: `zeroclaw chat` printed a `BrokenPipeError` traceback and exited 1; now as `zeroclaw rpc`."""
    write_end = closed_pipe()
    try:
        proc = run(first_daemon, "chat", stdin="hello\n", stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


@pytest.mark.req("R-CLI")
def test_chat_piped_to_head_leaves_quietly_mid_turn(first_daemon: Daemon) -> None:
    """`zeroclaw chat … | head -1`: the reader leaves while a turn streams (written from the chat's loop thread);
    status 141 and nothing on stderr, not the daemon blamed."""
    proc = subprocess.Popen(
        [*zeroclaw_command(), "chat", "--config-dir", str(first_daemon.config_dir)],
        cwd=REPO_ROOT,
        env=first_daemon.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b"/stream 20000\n")
    proc.stdin.close()
    assert proc.stdout.readline().startswith(b"session ")
    assert proc.stdout.readline()  # the chat goes on writing
    proc.stdout.close()  # as `head -1` does once it has its line
    assert proc.wait(WAIT * 3) == 141
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert err == "", err


# -- §4.6 ---------------------------------------------------------------------------------------------------------

DANGLING = """\
[users.me]
permission_profiles = ["admn"]

[permission_profiles.admin]
admin = true
"""


@pytest.mark.req("R-CFG-6")
def test_a_profile_that_does_not_exist_is_warned_at_start_and_at_reload(daemon_factory: DaemonFactory) -> None:
    """issue 29 §4.6: the daemon starts (a user may be written before its profile) and says which key names what."""
    d = daemon_factory.start(DANGLING)
    assert d.config_dir is not None
    profile = 'users.me.permission_profiles: no profile "admn"'
    assert any(profile in line and "WARNING" in line for line in d.stderr_lines), d.describe()
    config = d.config_dir / "config.toml"
    config.write_text(config.read_text() + '\n[agents.helper]\nprovider = "lokal"\n')
    d.send_signal(signal.SIGHUP)
    provider = 'agents.helper.provider: no provider "lokal"'
    d.wait_stderr_sync(provider, WAIT)
    assert sum(profile in line for line in d.stderr_lines) == 1, d.describe()  # not repeated by the reload


# -- §4.7 ---------------------------------------------------------------------------------------------------------


def test_upload_help_does_not_promise_a_resumable_rerun() -> None:
    """issue 29 §4.7: a rerun of `zeroclaw upload` starts over (an upload belongs to its connection)."""
    proc = subprocess.run([*zeroclaw_command(), "--help"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert "upload a file to a session" in proc.stdout and "resumable" not in proc.stdout, proc.stdout


# -- §4.8 ---------------------------------------------------------------------------------------------------------


@pytest.mark.req("R-CLI")
def test_rpc_with_piped_input_prints_frames_only(first_daemon: Daemon) -> None:
    """issue 29 §4.8: the banner and the prompt are for a terminal; piped input gets the answers and nothing else."""
    proc = run(first_daemon, "rpc", stdin="status\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("{") and "rpc>" not in proc.stdout, proc.stdout
    assert json.loads(proc.stdout)["result"]["pid"] == first_daemon.pid


# -- §4.10 --------------------------------------------------------------------------------------------------------


@pytest.mark.req("R-CLI")
def test_upload_to_an_unknown_session_draws_no_progress_bar(first_daemon: Daemon, tmp_path: Path) -> None:
    """issue 29 §4.10: the session is refused (by `file/upload/begin`) before any progress bar is drawn."""
    source = tmp_path / "note.txt"
    source.write_text("hello")
    proc = run(first_daemon, "upload", "no-such-session", str(source))
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == -32000
    assert proc.stderr.splitlines() == [
        f"zeroclaw: Session not found (-32000); list your sessions with "
        f"`zeroclaw rpc --config-dir {first_daemon.config_dir} session/list`"
    ]


# -- §4.11 --------------------------------------------------------------------------------------------------------


@pytest.mark.req("R-STORE-3")
def test_a_postgresql_url_without_asyncpg_names_the_url_to_write(daemon_factory: DaemonFactory) -> None:
    """issue 29 §4.11: `postgresql://` means psycopg to SQLAlchemy; the line says to write `postgresql+asyncpg://`
    (password masked), instead of that psycopg is missing."""
    d = daemon_factory.spawn('[storage]\nurl = "postgresql://me:s3cret@127.0.0.1:1/zc"\n')
    line = start_failure(d)
    assert line == (
        "zeroclaw daemon: cannot open the database postgresql://me:***@127.0.0.1:1/zc: the URL must name the asyncpg "
        "driver: write postgresql+asyncpg://me:***@127.0.0.1:1/zc (`pip install 'zeroclaw[postgres]'` installs it)"
    )
    assert "s3cret" not in d.stderr
    assert not re.search(r"psycopg\b", line)


@pytest.mark.req("R-CLI")
def test_db_upgrade_with_a_postgresql_url_without_asyncpg_says_the_same(daemon_factory: DaemonFactory) -> None:
    """issue 29 §4.11: `zeroclaw db upgrade` gives the same one line (it printed a traceback)."""
    root = daemon_factory.tmpdir()
    config_dir = root / "cfg"
    config_dir.mkdir(mode=0o700)
    (config_dir / "config.toml").write_text('[storage]\nurl = "postgresql://me:s3cret@127.0.0.1:1/zc"\n')
    proc = subprocess.run(
        [*zeroclaw_command(), "db", "upgrade", "--config-dir", str(config_dir)],
        cwd=REPO_ROOT,
        env=clean_env(root),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "zeroclaw: db upgrade: postgresql://me:***@127.0.0.1:1/zc: the URL must name the asyncpg driver: write "
        "postgresql+asyncpg://me:***@127.0.0.1:1/zc (`pip install 'zeroclaw[postgres]'` installs it)"
    ]
