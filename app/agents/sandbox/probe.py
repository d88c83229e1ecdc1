"""Whether bubblewrap works here, checked once per daemon with the namespaces a call uses (R-GUARD-4)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache

from app.agents.sandbox.policy import bwrap_argv

__all__ = ["bwrap_problem", "find_bwrap"]


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


@cache
def bwrap_problem() -> str | None:
    """None when a sandboxed `true` runs; else why not, in a sentence."""
    if sys.platform != "linux":
        return f"bubblewrap exists only on Linux; this is {sys.platform}"
    bwrap = find_bwrap()
    if bwrap is None:
        return "bwrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    true = shutil.which("true") or "/bin/true"
    argv = bwrap_argv(bwrap, "workspace-write", "/", (), [true])
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap cannot make its namespaces here: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return None
