"""The bash sandbox's command line (R-GUARD-4): what each policy mounts, hides and unshares."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.sandbox.limits import Limits
from app.agents.sandbox.policy import bwrap_argv

pytestmark = pytest.mark.req("R-GUARD-4")

HIDDEN = ("/home/u/.config/zeroclaw", "/home/u/.local/share/zeroclaw", "/home/u/.ssh")
WS = "/home/u/.local/share/zeroclaw/workspaces/default"


def argv(policy: str, workspace: str = WS) -> list[str]:
    return bwrap_argv("bwrap", policy, workspace, HIDDEN, ["/bin/bash", "-c", "true"])  # type: ignore[arg-type]


def pairs(args: list[str]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(args):
        if args[i] in ("--bind", "--ro-bind"):
            out.append(tuple(args[i : i + 3]))
            i += 3
        elif args[i] == "--tmpfs":
            out.append(tuple(args[i : i + 2]))
            i += 2
        else:
            i += 1
    return out


def test_workspace_write_is_the_default_shape() -> None:
    args = argv("workspace-write")
    assert args[:5] == ["bwrap", "--ro-bind", "/", "/", "--dev"]
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in args
    assert args[args.index("--uid") + 1] == "65534"
    mounts = pairs(args)
    # The data directory is hidden, then the workspace inside it is bound back (deeper mount last).
    assert mounts.index(("--tmpfs", HIDDEN[1])) < mounts.index(("--bind", WS, WS))
    assert ("--tmpfs", "/home/u/.ssh") in mounts and ("--tmpfs", HIDDEN[0]) in mounts
    assert args[-4:] == ["--", "/bin/bash", "-c", "true"]


def test_read_only_and_net_policies() -> None:
    assert ("--ro-bind", WS, WS) in pairs(argv("read-only")) and "--unshare-net" in argv("read-only")
    net = argv("workspace-write-net")
    assert "--unshare-net" not in net and ("--bind", WS, WS) in pairs(net)


def test_a_data_dir_inside_the_workspace_stays_hidden() -> None:
    mounts = pairs(argv("workspace-write", workspace="/home/u"))
    assert mounts.index(("--bind", "/home/u", "/home/u")) < mounts.index(("--tmpfs", HIDDEN[1]))


def test_limits_as_prlimit_arguments() -> None:
    limits = Limits(max_processes=64, max_memory_bytes=1 << 30, max_file_bytes=1 << 20, max_cpu_secs=10)
    assert limits.prlimit_args("prlimit", nproc=False) == [
        "prlimit",
        f"--as={1 << 30}",
        f"--fsize={1 << 20}",
        "--cpu=10",
        "--core=0",
        "--",
    ]
    assert "--nproc=64" in limits.prlimit_args("prlimit", nproc=True)


def test_ulimit_script_units() -> None:
    limits = Limits(max_processes=64, max_memory_bytes=1 << 30, max_file_bytes=1 << 20, max_cpu_secs=10)
    # dash and bash-as-sh: -v in KiB, -f in 512-byte blocks
    assert limits.ulimit_script() == "ulimit -v 1048576 && ulimit -f 2048 && ulimit -t 10 && ulimit -c 0"


def test_host_modes_and_hidden_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.agents.sandbox import host as host_module

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    host = host_module.SandboxHost([tmp_path / "cfg", tmp_path / "data"])
    assert host.hidden == (str(tmp_path / "cfg"), str(tmp_path / "data"), str(tmp_path / "home" / ".ssh"))
    limits = Limits(8, 1 << 30, 1 << 20, 10)
    monkeypatch.setattr(host_module, "bwrap_problem", lambda: "bwrap is not installed")
    assert host.mode("auto") == "off" and host.mode("bwrap") == "unavailable" and host.mode("off") == "off"
    assert host.sandbox("bwrap", "workspace-write", limits).problem == "bwrap is not installed"
    assert not host.sandbox("auto", "workspace-write", limits).enabled
    monkeypatch.setattr(host_module, "bwrap_problem", lambda: None)
    assert host.mode("auto") == "bwrap" and host.sandbox("auto", "read-only", limits).enabled
    assert host.mode("off") == "off" and not host.sandbox("off", "read-only", limits).enabled
