"""The bubblewrap command line for a sandbox policy (R-GUARD-4). Pure: no file system access, no processes.

Every policy: the whole file system read-only (`--ro-bind / /`), a fresh `/dev`, `/proc` of its own PID namespace,
a private `/tmp`; the hidden directories (the daemon's config and data directories, `~/.ssh`) covered by an empty
tmpfs; its own user namespace as uid/gid 65534 (nobody, without capabilities even when the daemon is root), PID,
and IPC namespaces; a new session (no TIOCSTI into the daemon's terminal); killed when the daemon dies.

* `workspace-write` (default): the session workspace writable, no network (own empty network namespace).
* `read-only`: the workspace read-only too (only the private `/tmp` is writable), no network.
* `workspace-write-net`: as `workspace-write`, with the host's network (loopback included).

Mounts on nested paths are ordered shallow to deep, so the deeper one wins: a workspace inside the data directory
(the default `<data_dir>/workspaces/<alias>`) is bound back over the hidden tmpfs, and a data directory inside a
workspace stays hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Literal

__all__ = ["NOBODY", "POLICIES", "Policy", "bwrap_argv"]

Policy = Literal["workspace-write", "read-only", "workspace-write-net"]
POLICIES: tuple[Policy, ...] = ("workspace-write", "read-only", "workspace-write-net")
NOBODY = 65534
_PRIVATE_TMP = "/tmp"  # noqa: S108  (inside the sandbox: a fresh tmpfs of its own, not the host's /tmp)


def bwrap_argv(bwrap: str, policy: Policy, workspace: str, hidden: Sequence[str], command: Sequence[str]) -> list[str]:
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", _PRIVATE_TMP]
    argv += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    if policy != "workspace-write-net":
        argv.append("--unshare-net")
    mounts: list[tuple[str, list[str]]] = [(h, ["--tmpfs", h]) for h in hidden if not _under(h, _PRIVATE_TMP)]
    bind = "--ro-bind" if policy == "read-only" else "--bind"
    mounts.append((workspace, [bind, workspace, workspace]))
    for _path, args in sorted(mounts, key=lambda m: len(PurePosixPath(m[0]).parts)):
        argv += args
    argv += ["--chdir", workspace, "--", *command]
    return argv


def _under(path: str, root: str) -> bool:
    p, r = PurePosixPath(path), PurePosixPath(root)
    return p == r or r in p.parents
