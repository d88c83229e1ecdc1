#!/usr/bin/env python3
"""A throw-away PostgreSQL cluster for the tests' PostgreSQL pass (docs/development.md).

    python3 .ci/postgres.py start DIR   # prints the server URL (postgresql+asyncpg://postgres@127.0.0.1:PORT/postgres)
    python3 .ci/postgres.py stop DIR    # stops the server and removes DIR

Debian's `postgresql` package provides the binaries (/usr/lib/postgresql/<version>/bin). `initdb` refuses to run as
root, so as root the cluster belongs to an unprivileged system user (`zeroclaw-pg`, created on first use) and every
server command runs through `runuser`. The server listens on 127.0.0.1 only, on a free port, with `trust`
authentication (anyone on this machine may connect: it holds nothing but test data and lives for one CI run), and
with `fsync=off`: a killed *daemon* still loses nothing it committed (the server holds it), only a crash of the
whole machine could, and then the cluster is thrown away anyway.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
from pathlib import Path

USER = "zeroclaw-pg"
PG_ROOT = Path("/usr/lib/postgresql")


def _bin_dir() -> Path:
    versions = sorted((p for p in PG_ROOT.glob("*/bin") if (p / "initdb").exists()), key=lambda p: int(p.parent.name))
    if not versions:
        sys.exit(f"no PostgreSQL under {PG_ROOT}: apt-get install -y postgresql")
    return versions[-1]


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
    return ["runuser", "-u", USER, "--", *cmd]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(root: Path) -> str:
    bin_dir = _bin_dir()
    root.mkdir(mode=0o700, parents=True, exist_ok=False)
    if os.geteuid() == 0:
        _as_owner(["true"])  # creates the user
        shutil.chown(root, USER, USER)
    data = root / "data"
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync"]
    subprocess.run(_as_owner([*initdb, "-E", "UTF8", "--locale=C.UTF-8"]), check=True, stdout=subprocess.DEVNULL)
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
    cmd = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", options, "-w", "start"]
    subprocess.run(_as_owner(cmd), check=True, stdout=subprocess.DEVNULL)
    return f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"


def stop(root: Path) -> None:
    data = root / "data"
    if (data / "postmaster.pid").exists():
        cmd = [str(_bin_dir() / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        subprocess.run(_as_owner(cmd), check=False, stdout=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in {"start", "stop"}:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1]).absolute()
    if argv[0] == "start":
        print(start(root))
    else:
        stop(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
