"""`zeroclaw service install|uninstall` (R-SVC-3), run as the real command: the units it prints pass
`systemd-analyze verify` (as user units), and install/uninstall write and remove them under `XDG_CONFIG_HOME`.

No systemd runs in the test container: `systemd-analyze --user verify` needs only a runtime dir, given here.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_harness import REPO_ROOT, clean_env, zeroclaw_command

pytestmark = pytest.mark.skipif(os.name != "posix", reason="systemd user units")

UNIT_HEADER = re.compile(r"^# (/\S+/(zeroclaw\.(?:service|socket)))$", re.M)


def zeroclaw(tmp_path: Path, *args: str, xdg: Path | None = None) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    env = clean_env(home, {"XDG_CONFIG_HOME": str(xdg) if xdg else None})
    return subprocess.run(
        [*zeroclaw_command(), "service", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def printed_units(stdout: str) -> dict[str, str]:
    """`--print`'s output: each file under a `# <path>` line."""
    parts = UNIT_HEADER.split(stdout)
    return {name: text.strip() + "\n" for _path, name, text in zip(parts[1::3], parts[2::3], parts[3::3], strict=True)}


def verify(tmp_path: Path, units: dict[str, str]) -> subprocess.CompletedProcess[str]:
    unit_dir = tmp_path / "verify"
    unit_dir.mkdir()
    for name, text in units.items():
        (unit_dir / name).write_text(text)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    analyze = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_LEVEL": "notice"}
    return subprocess.run(
        [analyze, "--user", "verify", "--man=no", *(str(unit_dir / name) for name in sorted(units))],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def unit_command() -> list[str]:
    """How the units run zeroclaw when this test runs it: its console script, else `python -m app.cli`."""
    command = zeroclaw_command()
    return command if len(command) == 1 else [command[0], "-m", "app.cli"]


@pytest.mark.req("R-SVC-3")
def test_printed_units_with_socket_activation_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    config_dir = tmp_path / "my config %h"  # a space and a specifier: quoted and escaped in the units
    done = zeroclaw(tmp_path, "install", "--print", "--socket-activation", "--config-dir", str(config_dir))
    assert done.returncode == 0, done.stderr
    units = printed_units(done.stdout)
    assert sorted(units) == ["zeroclaw.service", "zeroclaw.socket"]
    service, sock = units["zeroclaw.service"], units["zeroclaw.socket"]
    for line in ("Type=notify", "NotifyAccess=main", "Restart=on-failure", "Requires=zeroclaw.socket"):
        assert line in service.splitlines()
    exec_start = next(line for line in service.splitlines() if line.startswith("ExecStart="))
    assert exec_start.startswith(f"ExecStart={' '.join(unit_command())} daemon --config-dir "), exec_start
    assert exec_start.endswith(f'"{str(config_dir).replace("%", "%%")}" --ephemeral'), exec_start
    endpoint = str(config_dir / "data" / "daemon.sock").replace("%", "%%")
    for line in (f"ListenStream={endpoint}", "SocketMode=0600", "DirectoryMode=0700", "FileDescriptorName=rpc"):
        assert line in sock.splitlines()
    assert "WantedBy=sockets.target" in sock.splitlines()

    checked = verify(tmp_path, units)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "" and checked.stderr.strip() == "", checked.stderr


@pytest.mark.req("R-SVC-3")
def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check above means something: a unit whose ExecStart does not exist fails it."""
    done = zeroclaw(tmp_path, "install", "--print", "--socket-activation", "--config-dir", str(tmp_path / "c"))
    units = printed_units(done.stdout)
    units["zeroclaw.service"] = units["zeroclaw.service"].replace(zeroclaw_command()[0], "/nonexistent/zeroclaw")
    checked = verify(tmp_path, units)
    assert checked.returncode != 0 and "/nonexistent/zeroclaw" in checked.stderr


@pytest.mark.req("R-SVC-3")
def test_printed_service_without_activation_and_with_a_watchdog_passes_verify(tmp_path: Path) -> None:
    done = zeroclaw(tmp_path, "install", "--print", "--watchdog-sec", "30", "--config-dir", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    units = printed_units(done.stdout)
    assert sorted(units) == ["zeroclaw.service"]
    lines = units["zeroclaw.service"].splitlines()
    assert "WatchdogSec=30s" in lines and "WantedBy=default.target" in lines
    assert not any(line.startswith("Requires=") for line in lines)
    assert not any("--ephemeral" in line for line in lines)  # no socket: a daemon that stays
    checked = verify(tmp_path, units)
    assert checked.returncode == 0 and checked.stderr.strip() == "", checked.stderr


@pytest.mark.req("R-SVC-3")
def test_install_writes_the_units_and_uninstall_removes_them(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    unit_dir = xdg / "systemd" / "user"
    done = zeroclaw(tmp_path, "install", "--socket-activation", "--config-dir", str(tmp_path / "c"), xdg=xdg)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in unit_dir.iterdir()) == ["zeroclaw.service", "zeroclaw.socket"]
    assert "systemctl --user daemon-reload && systemctl --user enable --now zeroclaw.socket" in done.stdout
    assert not (tmp_path / "home" / ".config").exists(), "XDG_CONFIG_HOME was not respected"
    # What `systemctl --user enable` would add: uninstall removes it too.
    wants = unit_dir / "sockets.target.wants"
    wants.mkdir()
    (wants / "zeroclaw.socket").symlink_to(unit_dir / "zeroclaw.socket")

    again = zeroclaw(tmp_path, "install", "--config-dir", str(tmp_path / "c"), xdg=xdg)  # no activation now
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in unit_dir.glob("zeroclaw.*")) == ["zeroclaw.service"]
    assert not (wants / "zeroclaw.socket").is_symlink()

    gone = zeroclaw(tmp_path, "uninstall", xdg=xdg)
    assert gone.returncode == 0, gone.stderr
    assert list(unit_dir.glob("zeroclaw.*")) == []
    assert "removed" in gone.stdout
    nothing = zeroclaw(tmp_path, "uninstall", xdg=xdg)
    assert nothing.returncode == 0 and "nothing to remove" in nothing.stdout


@pytest.mark.req("R-SVC-3")
def test_a_unit_the_user_wrote_is_neither_overwritten_nor_removed(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    unit_dir = xdg / "systemd" / "user"
    unit_dir.mkdir(parents=True)
    mine = unit_dir / "zeroclaw.service"
    mine.write_text("[Service]\nExecStart=/bin/true\n")
    done = zeroclaw(tmp_path, "install", xdg=xdg)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"zeroclaw: service install: {mine} was not written by zeroclaw; move it away first"
    ]
    gone = zeroclaw(tmp_path, "uninstall", xdg=xdg)
    assert gone.returncode == 0 and mine.read_text() == "[Service]\nExecStart=/bin/true\n"


@pytest.mark.req("R-SVC-3")
def test_print_launchd_is_a_well_formed_plist(tmp_path: Path) -> None:
    """macOS is not tested beyond this: the plist parses and runs this zeroclaw's daemon."""
    done = zeroclaw(tmp_path, "install", "--print", "--launchd", "--config-dir", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    agent = plistlib.loads(done.stdout.encode())
    assert agent["Label"] == "dev.zeroclaw.daemon"
    assert agent["ProgramArguments"] == [*unit_command(), "daemon", "--config-dir", str(tmp_path / "c")]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}


@pytest.mark.req("R-SVC-3")
def test_the_fallback_exec_start_runs_zeroclaw() -> None:
    """Regression: a unit written when zeroclaw was not run by its console script says `python -m app.cli`,
    which needs `app/cli/__main__.py` (without it: "'app.cli' is a package and cannot be directly executed")."""
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("zeroclaw "), done.stderr


def documented_block(after: str) -> str:
    """The first ```sh block of docs/operations.md after the text `after`."""
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    rest = text[text.index(after) :]
    return rest.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.mark.req("R-SVC-3")
def test_the_documented_verify_needs_a_runtime_dir_and_passes_with_one(tmp_path: Path) -> None:
    """issue 38 §5.10: docs/operations.md's own check of the installed units, run as written, with a fresh HOME:
    without `XDG_RUNTIME_DIR` it fails before reading a unit (as the docs say), with one it passes."""
    block = documented_block("To check them yourself:")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    bin_dir = Path(zeroclaw_command()[0]).parent  # this tree's `zeroclaw` first on PATH
    env = clean_env(home, {"XDG_CONFIG_HOME": None, "XDG_RUNTIME_DIR": None})
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-ec", script], env=env, capture_output=True, text=True, timeout=60, check=False)

    without = run(block)
    assert without.returncode != 0, without.stderr
    failed = ("Failed to initialize manager", "Failed to create directory")
    assert any(line in without.stderr for line in failed), without.stderr
    install, verify = block.strip().splitlines()
    with_dir = run(f"{install}\nXDG_RUNTIME_DIR=$(mktemp -d) {verify}")
    assert with_dir.returncode == 0, with_dir.stderr
