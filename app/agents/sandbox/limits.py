"""Resource limits for a sandboxed call (R-GUARD-4): address space, file size and CPU time as rlimits (`prlimit`,
inherited by everything the call starts), and the number of processes as a pids cgroup.

`RLIMIT_NPROC` counts processes per real uid and never binds uid 0: as root (CI, containers) a fork bomb would
only stop at the kernel's pid limit. So each call gets its own pids cgroup with `pids.max`, cgroup v2 or the v1
`pids` hierarchy, whichever this host lets the daemon write; the launcher shell moves itself there before it
execs bwrap. Without a writable pids cgroup, `RLIMIT_NPROC` is used (it binds every other user) and `status`
says so in the log once.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["Limits", "PidsCgroup", "pids_root"]

log = logging.getLogger("zeroclaw.sandbox")
_calls = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Limits:
    max_processes: int
    max_memory_bytes: int
    max_file_bytes: int
    max_cpu_secs: int

    def ulimit_script(self) -> str:
        """The same limits as POSIX `sh` `ulimit` commands (no exec of prlimit): `-v` in KiB, `-f` in 512-byte
        blocks (dash, and bash as `sh`), `-t` in seconds, `-c` core size. There is no portable `ulimit` for the
        process count (bash `-u`, dash `-p`): the pids cgroup bounds that."""
        return (
            f"ulimit -v {self.max_memory_bytes // 1024} && ulimit -f {max(1, self.max_file_bytes // 512)}"
            f" && ulimit -t {self.max_cpu_secs} && ulimit -c 0"
        )

    def prlimit_args(self, prlimit: str, *, nproc: bool) -> list[str]:
        args = [
            prlimit,
            f"--as={self.max_memory_bytes}",
            f"--fsize={self.max_file_bytes}",
            f"--cpu={self.max_cpu_secs}",
            "--core=0",
        ]
        if nproc:
            args.append(f"--nproc={self.max_processes}")
        return [*args, "--"]


@cache
def pids_root() -> Path | None:
    """A cgroup directory this daemon may create pids-limited children in, or None."""
    for candidate in _candidates():
        probe = candidate / f"zeroclaw-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").exists():
                return candidate
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return None


def _candidates() -> list[Path]:
    out: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":  # cgroup v2: our own cgroup, if pids is delegated to its children
            for mount in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                base = mount / rel
                try:
                    if "pids" in (mount / "cgroup.controllers").read_text().split():
                        out.append(base)
                except OSError:
                    continue
        elif "pids" in controllers.split(","):
            out.append(Path("/sys/fs/cgroup/pids") / rel)
    return out


class PidsCgroup:
    """One call's pids cgroup: made before the call, removed after (its processes are gone by then)."""

    def __init__(self, root: Path, max_processes: int) -> None:
        self.path = root / f"zeroclaw-{os.getpid()}-{next(_calls)}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(max_processes))

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def kill(self) -> None:
        """SIGKILL whatever is still in it (a process that escaped the call's process group and namespace)."""
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
                return
        with contextlib.suppress(OSError):
            for pid in (self.path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), 9)

    def remove(self) -> bool:
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True
