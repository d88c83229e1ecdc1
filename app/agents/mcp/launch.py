"""Run a stdio MCP server so that it dies with the daemon, even on SIGKILL: `python -S launch.py CMD ARGS...` sets
PR_SET_PDEATHSIG (SIGKILL) and then execs CMD. The SDK already starts it in its own session (process group)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    parent = int(os.environ.pop("ZEROCLAW_MCP_PARENT", "0") or 0)
    if sys.platform == "linux":  # elsewhere the process group is the only safeguard
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # a libc without prctl
            pass
    if parent and os.getppid() != parent:  # the daemon died before prctl took effect
        sys.exit(1)
    os.execvp(argv[0], argv)  # noqa: S606 -- the configured command, run as the server (R-MCP-1)


if __name__ == "__main__":
    main(sys.argv[1:])
