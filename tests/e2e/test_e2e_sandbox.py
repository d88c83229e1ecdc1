"""The bash sandbox from real turns (R-GUARD-4, R-GUARD-5): each escape fails while the daemon keeps serving, and
with `sandbox = "off"` the same reads and writes succeed, so the test proves something.

The daemon's directories live under /var/tmp here, not /tmp: the sandbox's private /tmp would hide them anyway,
and the point is to see the hidden-directory mounts at work. The fork bomb, the kill and the 4 GiB allocation run
only sandboxed, and the fork bomb only where a pids cgroup bounds it (as root, RLIMIT_NPROC does not).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, check_turn, new_sid
from waiting import until

from app.agents.sandbox.limits import pids_root
from app.agents.sandbox.probe import bwrap_problem

pytestmark = [
    pytest.mark.skipif(os.name != "posix" or bwrap_problem() is not None, reason=f"no bwrap here: {bwrap_problem()}"),
    pytest.mark.req("R-GUARD-4"),
    pytest.mark.req("R-GUARD-5"),
]

SENTINEL = f"sentinel-{uuid.uuid4().hex}"
BOMB = "b() { b | b & }"


def config(sandbox: str) -> str:
    return f"""\
# {SENTINEL}
[gateway]
port = 0

[tools]
bash_timeout_secs = 10

[tools.bash]
sandbox = "{sandbox}"
max_processes = 64

[agents.default]
auto_approve = ["bash"]
"""


def start(factory: DaemonFactory, sandbox: str) -> Daemon:
    root = Path(tempfile.mkdtemp(prefix="zc-e2e-", dir="/var/tmp"))
    factory.roots.append(root)
    return factory.start(config(sandbox), root=root, no_gateway=False)


@pytest.fixture(scope="module")
def daemons() -> Iterator[dict[str, Daemon]]:
    factory = DaemonFactory()
    try:
        yield {"bwrap": start(factory, "auto"), "off": start(factory, "off")}
    finally:
        factory.close()


async def bash(peer: Peer, sid: str, command: str) -> str:
    turn = await peer.prompt(sid, f"/bash {command}", timeout=60)
    check_turn(turn, sid)
    assert "approval_request" not in turn.types
    return str(turn.of_type("tool_result")[0]["rawOutput"])


def escapes(daemon: Daemon, status: dict[str, Any], marker: Path) -> dict[str, str]:
    """What each escape runs; it prints `ESCAPED` only if it worked."""
    assert daemon.config_dir is not None
    port = int(status["gateway"]["url"].rsplit(":", 1)[1])
    return {
        "write outside the workspace": f"echo x > {marker} && echo ESCAPED",
        "read config.toml": f"cat {daemon.config_dir / 'config.toml'}",
        "read the database": f"head -c 16 {daemon.data_dir / 'zeroclaw.db'} && echo",
        "connect to the gateway": f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo ESCAPED",
        "connect to the socket": (
            'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('{status['endpoint']}'); print('ESCAPED')\""
        ),
    }


def escaped(name: str, output: str) -> bool:
    if name == "read config.toml":
        return SENTINEL in output
    if name == "read the database":
        return "SQLite format 3" in output
    return "ESCAPED" in output


@pytest.mark.parametrize("mode", ["bwrap", "off"])
async def test_reads_writes_and_connections(daemons: dict[str, Daemon], mode: str) -> None:
    daemon = daemons[mode]
    marker = daemon.root / f"outside-{mode}"
    async with await Peer.open(daemon) as owner:
        status = await owner.call("status")
        assert status["sandbox"] == mode
        sid = await new_sid(owner)
        results = {}
        for name, command in escapes(daemon, status, marker).items():
            if name == "read the database" and not (daemon.data_dir / "zeroclaw.db").exists():
                continue  # PostgreSQL pass: no database file
            output = await bash(owner, sid, command)
            assert not output.startswith("bwrap:"), output  # the sandbox itself started: the command was refused inside
            results[name] = escaped(name, output)
        assert (await owner.call("status"))["pid"] == daemon.pid
    if mode == "bwrap":
        assert not any(results.values()), results
        assert not marker.exists()
    else:  # the same commands unsandboxed: each one works, so the sandboxed run means something
        assert all(results.values()), results
        assert marker.exists()


async def test_the_workspace_and_tmp_are_writable(daemons: dict[str, Daemon]) -> None:
    async with await Peer.open(daemons["bwrap"]) as owner:
        sid = await new_sid(owner)
        out = await bash(owner, sid, "echo hi > made-here && cat made-here && echo t > /tmp/t && cat /tmp/t && id -u")
        assert "hi\nt\n65534\n" in out


async def test_secret_looking_variables_are_not_inherited(daemon_factory: DaemonFactory) -> None:
    root = Path(tempfile.mkdtemp(prefix="zc-e2e-", dir="/var/tmp"))
    daemon_factory.roots.append(root)
    env = {"OPENAI_API_KEY": "sk-must-not-leak", "PLAIN_SETTING": "visible"}
    daemon = daemon_factory.start(config("auto"), root=root, no_gateway=False, env=env)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        out = await bash(owner, sid, "echo key=$OPENAI_API_KEY plain=$PLAIN_SETTING")
        assert "key= plain=visible" in out, out


async def test_kill_the_daemon(daemons: dict[str, Daemon]) -> None:
    daemon = daemons["bwrap"]
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        out = await bash(owner, sid, f"kill -9 {daemon.pid}; echo rc=$?")
        assert "rc=0" not in out, out
        assert daemon.is_running() and (await owner.call("status"))["pid"] == daemon.pid


async def test_allocate_4_gib(daemons: dict[str, Daemon]) -> None:
    daemon = daemons["bwrap"]
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        out = await bash(owner, sid, "python3 -c 'b = bytearray(4 << 30); print(\"ALLOCATED\", len(b))'")
        assert "ALLOCATED" not in out and "MemoryError" in out, out
        assert (await owner.call("status"))["pid"] == daemon.pid


@pytest.mark.skipif(os.geteuid() == 0 and pids_root() is None, reason="root without a pids cgroup: unbounded")
async def test_fork_bomb(daemons: dict[str, Daemon]) -> None:
    daemon = daemons["bwrap"]

    def bomb_processes() -> int:
        """Processes on this host running the bomb's shell (seen from outside the sandbox)."""
        count = 0
        for name in os.listdir("/proc"):
            with contextlib.suppress(OSError):
                if name.isdigit() and BOMB.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    count += 1
        return count

    async with await Peer.open(daemon) as owner, await Peer.open(daemon) as watcher:
        sid = await new_sid(owner)
        bomb = asyncio.ensure_future(bash(owner, sid, f"{BOMB}; b; sleep 3"))
        answered, peak = 0, 0
        while not bomb.done():  # the daemon keeps serving while the bomb runs
            assert (await watcher.call("status", timeout=5))["pid"] == daemon.pid
            answered += 1
            peak = max(peak, bomb_processes())
            await asyncio.sleep(0.5)  # time is the behaviour: status keeps answering throughout the bomb
        out = await bomb
        # Its output is mostly bash's complaints (cut at the output limit): forks were refused.
        assert answered >= 3 and ("retry" in out or "Resource temporarily unavailable" in out), out[:300]
        assert 0 < peak <= 64, peak  # [tools.bash] max_processes = 64
        await until(lambda: bomb_processes() == 0, interval=0.1, what="the bomb's processes gone with the call")
        assert (await bash(owner, sid, "echo still-fine")).startswith("still-fine")
    assert daemon.is_running()


async def test_without_bwrap_auto_warns_once_and_bwrap_refuses(daemon_factory: DaemonFactory) -> None:
    """R-GUARD-4: where bwrap is missing (here: not on PATH), `auto` runs unsandboxed with one warning at start and
    `status.sandbox = "off"`; `"bwrap"` refuses to run a command and says why."""
    path = {"PATH": str(Path(sys.executable).parent)}  # the daemon's Python, and no bwrap
    daemon = daemon_factory.start(config("auto"), env=path)
    await daemon.wait_stderr(lambda text: "UNSANDBOXED" in text)
    async with await Peer.open(daemon) as owner:
        assert (await owner.call("status"))["sandbox"] == "off"
        sid = await new_sid(owner)
        assert "unsandboxed-ok" in await bash(owner, sid, "echo unsandboxed-ok")
        await owner.call("config/set", {"prop": "tools.bash.sandbox", "value": "bwrap"})
        assert (await owner.call("status"))["sandbox"] == "unavailable"
        out = await bash(owner, sid, "echo must-not-run")
        assert out.startswith('Not run: [tools.bash] sandbox = "bwrap" is required') and "must-not-run" not in out, out
    assert daemon.stderr.count("UNSANDBOXED") == 1
