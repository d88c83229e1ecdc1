"""What the daemon hides from its shell, and the sandbox one `bash` call runs under (R-GUARD-4)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.agents.sandbox.limits import Limits, PidsCgroup, pids_root
from app.agents.sandbox.policy import Policy, bwrap_argv
from app.agents.sandbox.probe import bwrap_problem, find_bwrap

__all__ = ["Sandbox", "SandboxHost"]

log = logging.getLogger("zeroclaw.sandbox")
Mode = Literal["auto", "bwrap", "off"]
# Join the call's pids cgroup, set the limits, then become bwrap: one shell, no further exec before bwrap.
_LAUNCH = 'echo $$ > "$0" && {limits} && exec "$@"'


@dataclass(frozen=True, slots=True)
class Sandbox:
    """One call's sandbox: `enabled`, or a `problem` when it is required (`"bwrap"`) and cannot be had."""

    enabled: bool
    policy: Policy
    hidden: tuple[str, ...]
    limits: Limits
    problem: str | None = None

    def launch(self, command: Sequence[str], workspace: Path) -> tuple[list[str], PidsCgroup | None]:
        """The argv that runs `command` sandboxed, and the pids cgroup made for it (None without one)."""
        bwrap = find_bwrap() or "bwrap"
        hidden = [h for h in self.hidden if os.path.isdir(h)]  # bwrap cannot mount over what does not exist
        inner = bwrap_argv(bwrap, self.policy, str(workspace), hidden, command)
        root = pids_root()
        cgroup = None
        if root is not None:
            try:
                cgroup = PidsCgroup(root, self.limits.max_processes)
            except OSError:
                log.warning("could not make a pids cgroup under %s; using RLIMIT_NPROC", root, exc_info=True)
        if cgroup is not None:
            return ["/bin/sh", "-c", _LAUNCH.format(limits=self.limits.ulimit_script()), cgroup.procs, *inner], cgroup
        prlimit = shutil.which("prlimit")  # util-linux: RLIMIT_NPROC too, which `sh`'s ulimit cannot set portably
        limits = self.limits.prlimit_args(prlimit, nproc=True) if prlimit else []
        return [*limits, *inner], None


_releasing: set[asyncio.Task[None]] = set()  # removals under way, kept referenced until done


def release(cgroup: PidsCgroup | None) -> None:
    """Kill what is left in the call's cgroup now, and remove the cgroup in the background: a killed namespace takes
    a moment to empty, and the call's result need not wait for that."""
    if cgroup is None:
        return
    cgroup.kill()
    if cgroup.remove():
        return
    task = asyncio.get_running_loop().create_task(_remove_later(cgroup))
    _releasing.add(task)
    task.add_done_callback(_releasing.discard)


async def _remove_later(cgroup: PidsCgroup) -> None:
    delay = 0.001
    while delay < 2.0:
        await asyncio.sleep(delay)
        if cgroup.remove():
            return
        cgroup.kill()
        delay *= 2
    log.warning("the sandbox cgroup %s is still busy; left in place", cgroup.path)


class SandboxHost:
    """The daemon's side: the directories every sandbox hides, and the mode in force for a `[tools.bash]`."""

    def __init__(self, hidden: Sequence[Path]) -> None:
        home = Path(os.path.expanduser("~"))
        paths = [*hidden, home / ".ssh"]
        self.hidden = tuple(dict.fromkeys(str(p.resolve()) for p in paths))
        self._warned = False

    def mode(self, requested: Mode) -> Literal["bwrap", "off", "unavailable"]:
        """The mode in force (`status.sandbox`): `auto` is bwrap when it works here, else off; a required `bwrap`
        that does not work is `unavailable` (no command runs)."""
        if requested == "off":
            return "off"
        if bwrap_problem() is None:
            return "bwrap"
        return "off" if requested == "auto" else "unavailable"

    def check_soon(self, requested: Mode) -> None:
        """At start, off the start path: probe bwrap in a short-lived thread (a namespace set-up costs ~10 ms), so
        `auto` without a working bwrap warns once while the daemon already serves, and the first call finds the
        answer cached."""
        if requested == "auto":
            threading.Thread(target=self.warn_once, args=(requested,), name="sandbox-probe", daemon=True).start()

    def warn_once(self, requested: Mode) -> None:
        """At start: `auto` without a working bwrap runs unsandboxed, and says so once."""
        if requested == "auto" and not self._warned and (problem := bwrap_problem()) is not None:
            self._warned = True
            log.warning('[tools.bash] sandbox = "auto": %s; bash commands run UNSANDBOXED', problem)

    def sandbox(self, requested: Mode, policy: Policy, limits: Limits) -> Sandbox:
        if requested == "off":
            return Sandbox(False, policy, self.hidden, limits)
        problem = bwrap_problem()
        if problem is None:
            return Sandbox(True, policy, self.hidden, limits)
        if requested == "bwrap":
            return Sandbox(False, policy, self.hidden, limits, problem=problem)
        return Sandbox(False, policy, self.hidden, limits)
