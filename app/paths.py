"""Where things live: config dir, data dir and endpoint (R-PATH-1..3), and the directory rules (R-SEC-1, 2)."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "InsecureDirectory",
    "Paths",
    "ensure_endpoint_dir",
    "ensure_private_dir",
    "pipe_name",
    "process_uid",
    "resolve",
]


class InsecureDirectory(Exception):
    """A directory the endpoint would live in can be written or owned by someone else."""


@dataclass(frozen=True, slots=True)
class Paths:
    config_dir: Path
    data_dir: Path
    endpoint: str  # a filesystem path on Unix, a pipe name on Windows

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def lock_file(self) -> Path:
        if sys.platform == "win32":
            return self.data_dir / "daemon.lock"  # a pipe name is not a place for files
        return Path(self.endpoint + ".lock")

    @property
    def audit_log(self) -> Path:
        return self.data_dir / "logs" / "audit.log"

    @property
    def database(self) -> Path:
        return self.data_dir / "zeroclaw.db"


def pipe_name(data_dir: Path) -> str:
    r"""`\\.\pipe\zeroclaw-<h>`: `<h>` is the first 16 lowercase hex digits of SHA-256 over the UTF-8 bytes of
    `os.path.abspath(data_dir)` — fixed by definition, so stable across Python versions (unlike `hash()`).
    `abspath` normalises separators and `..` but resolves no symlinks, so daemon and clients must name the data
    dir the same way (they read the same config)."""
    digest = hashlib.sha256(os.path.abspath(data_dir).encode("utf-8")).hexdigest()[:16]
    return rf"\\.\pipe\zeroclaw-{digest}"


def process_uid() -> int:
    """The daemon's uid, which makes a local peer the owner (R-AUTH-3). Windows has no uids: there it is -1, and a
    pipe peer (whose uid the OS does not tell) counts as this user, the only one besides SYSTEM the pipe's DACL
    lets in (R-SEC-4)."""
    if sys.platform == "win32":
        return -1
    return os.getuid()


def resolve(config_dir: str | None, env: Mapping[str, str] | None = None, *, windows: bool | None = None) -> Paths:
    env = os.environ if env is None else env
    windows = sys.platform == "win32" if windows is None else windows
    home = Path(env.get("HOME") or Path.home())
    chosen = config_dir or env.get("ZEROCLAW_CONFIG_DIR")
    if chosen:
        cfg = Path(chosen).expanduser().absolute()
        data = cfg / "data"
    else:
        cfg = home / ".zeroclaw"
        data = Path(env["ZEROCLAW_DATA_DIR"]).expanduser().absolute() if env.get("ZEROCLAW_DATA_DIR") else cfg / "data"
    if env.get("ZEROCLAW_SOCKET"):
        endpoint = env["ZEROCLAW_SOCKET"]
    elif windows:
        endpoint = pipe_name(data)
    else:
        endpoint = str(data / "daemon.sock")
    return Paths(cfg, data, endpoint)


def ensure_private_dir(path: Path, *, tighten: bool = False) -> None:
    """Create `path` (and missing parents) 0700. An existing `path` is left as it is, unless `tighten` (the data
    dir, R-SEC-1): then it is made 0700 if it is ours. No other existing directory is ever chmod-ed."""
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
    if not tighten or sys.platform == "win32":  # no mode bits there: the user profile's ACL keeps others out
        return
    st = path.stat()
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def ensure_endpoint_dir(socket_path: Path, *, created_by_us: set[Path]) -> None:
    """The socket's directory must be ours (or root's) and not writable by others unless sticky (R-SEC-2)."""
    if sys.platform == "win32":
        raise NotImplementedError("Windows serves a named pipe, which lives in no directory")
    directory = socket_path.parent
    if not directory.exists():
        ensure_private_dir(directory)
        created_by_us.add(directory)
        return
    st = directory.stat()
    owner_ok = st.st_uid in (os.getuid(), 0)
    if not owner_ok:
        raise InsecureDirectory(f"{directory} belongs to another user (uid {st.st_uid}); refusing to serve there")
    writable_by_others = bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
    if writable_by_others and not st.st_mode & stat.S_ISVTX:
        raise InsecureDirectory(f"{directory} is writable by other users and not sticky; refusing to serve there")
