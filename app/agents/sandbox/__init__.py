"""The `bash` tool's sandbox (SPEC §25, R-GUARD-4): bubblewrap, resource limits and a pids cgroup.

policy.py   the bwrap command line for a policy (pure: paths in, argv out)
probe.py    whether bwrap works here (run once), and the mode in force for `[tools.bash] sandbox`
limits.py   resource limits (prlimit) and the per-call pids cgroup (RLIMIT_NPROC does not bind root)
host.py     `SandboxHost`: what the daemon hides, and `Sandbox`, what one call runs under
"""

from __future__ import annotations

from app.agents.sandbox.host import Sandbox, SandboxHost

__all__ = ["Sandbox", "SandboxHost"]
