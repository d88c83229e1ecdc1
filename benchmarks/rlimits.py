"""The kits' own descriptor limit: a kit holds one socket per client (1,000 and more), beyond a shell's usual
soft limit of 1,024."""

from __future__ import annotations

import contextlib
import resource

__all__ = ["raise_nofile"]

_UNLIMITED_TARGET = 65536


def raise_nofile() -> int:
    """Raise this process's RLIMIT_NOFILE soft limit to the hard limit (65,536 if the hard limit is unlimited);
    returns the soft limit in force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft, _UNLIMITED_TARGET) if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
