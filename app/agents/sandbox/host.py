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
_LAUNCH = 'echo $$ > "$0" && exec "$@"'  # join the call's pids cgroup, then become prlimit → bwrap


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
        prlimit = shutil.which("prlimit")
        root = pids_root()
        cgroup = None
        if root is not None:
            try:
                cgroup = PidsCgroup(root, self.limits.max_processes)
            except OSError:
                log.warning("could not make a pids cgroup under %s; using RLIMIT_NPROC", root, exc_info=True)
        limits = self.limits.prlimit_args(prlimit, nproc=cgroup is None) if prlimit else []
        if cgroup is None:
            return [*limits, *inner], None
        return ["/bin/sh", "-c", _LAUNCH, cgroup.procs, *limits, *inner], cgroup


async def release(cgroup: PidsCgroup | None) -> None:
    """Kill what is left in the call's cgroup and remove it (a killed namespace takes a moment to empty)."""
    if cgroup is None:
        return
    cgroup.kill()
    for _ in range(50):
        if cgroup.remove():
            return
        await asyncio.sleep(0.02)
    log.warning("the sandbox cgroup %s is still busy; left in place", cgroup.path)


class SandboxHost:
    """The daemon's side: the directories every sandbox hides, and the mode in force for a `[tools.bash]`."""

    def __init__(self, hidden: Sequence[Path]) -> None:
        home = Path(os.path.expanduser("~"))
        paths = [*hidden, home / ".ssh"]
        self.hidden = tuple(dict.fromkeys(str(p.resolve()) for p in paths))
        self._warned = False

    def mode(self, requested: Mode) -> Literal["bwrap", "off"]:
        """The mode in force: `auto` is bwrap when it works here, else off."""
        if requested == "off" or (requested == "auto" and bwrap_problem() is not None):
            return "off"
        return "bwrap"

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
