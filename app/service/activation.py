"""Socket activation (R-SVC-1): the listening sockets a service manager hands over as fds 3, 4, ...

The protocol is systemd's `sd_listen_fds_with_names(unset_environment=1)`:

    LISTEN_PID      the pid the fds are meant for; a variable inherited by another process is not ours
    LISTEN_FDS      how many, counted from fd 3
    LISTEN_FDNAMES  their names, colon-separated: `rpc` (the Unix endpoint) and `gateway` (TCP); any other name
                    (systemd's default is the socket unit's own name) or none: placed by the socket's family

The variables are removed from the environment whatever they say, so a child process (a tool's shell) never
takes the fds for its own. The daemon then serves these sockets as they are: it never binds, unlinks or chmods
their paths (the service manager owns them and keeps them for the next start).
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from collections.abc import MutableMapping
from dataclasses import dataclass

__all__ = ["ENV", "FIRST_FD", "ActivationError", "Inherited", "take"]

log = logging.getLogger("zeroclaw.activation")

FIRST_FD = 3  # SD_LISTEN_FDS_START
ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")
_MAX_FDS = 64  # far more than a daemon with two listeners is ever given; a bigger count is garbage
_ROLES = ("rpc", "gateway")


class ActivationError(Exception):
    """The inherited sockets cannot be used; a one-line reason naming the variable or the fd."""


@dataclass(frozen=True, slots=True)
class Inherited:
    """The listeners a service manager passed: the local endpoint's Unix socket and the gateway's TCP socket."""

    rpc: socket.socket | None = None
    gateway: socket.socket | None = None

    @property
    def rpc_path(self) -> str | None:
        """The filesystem path the rpc socket is bound to; None for none, an abstract or an unbound one."""
        if self.rpc is None:
            return None
        name = self.rpc.getsockname()
        return name if isinstance(name, str) and name and not name.startswith("\0") else None


def take(env: MutableMapping[str, str] | None = None, *, pid: int | None = None, first_fd: int = FIRST_FD) -> Inherited:
    """The sockets passed to this process (`pid`, default ours) from `first_fd` on (tests choose another), the
    LISTEN_* variables removed from `env`."""
    env = os.environ if env is None else env
    pid_text, count_text, names_text = (env.pop(key, None) for key in ENV)
    if count_text is None or pid_text is None:  # as sd_listen_fds: no LISTEN_PID, nothing passed
        return Inherited()
    if not pid_text.strip().isdigit():
        raise ActivationError(f"LISTEN_PID={_shown(pid_text)} is not a process id")
    if int(pid_text) != (os.getpid() if pid is None else pid):
        log.info("LISTEN_FDS is for pid %s, not this process: not taken", int(pid_text))
        return Inherited()
    if not count_text.strip().isdigit() or not 0 < int(count_text) <= _MAX_FDS:
        raise ActivationError(f"LISTEN_FDS={_shown(count_text)} is not a number of sockets (1 to {_MAX_FDS})")
    count = int(count_text)
    names = names_text.split(":") if names_text is not None else [""] * count
    if len(names) != count:
        raise ActivationError(f"LISTEN_FDNAMES names {len(names)} sockets but LISTEN_FDS={count}")
    found: dict[str, tuple[int, socket.socket]] = {}
    for fd, name in zip(range(first_fd, first_fd + count), names, strict=True):
        sock = _socket_of(fd, name)
        role = _role(fd, name, sock)
        if role in found:
            raise ActivationError(f"two sockets for {role}: fd {found[role][0]} and fd {fd}")
        found[role] = (fd, sock)
    return Inherited(**{role: sock for role, (_fd, sock) in found.items()})


def _socket_of(fd: int, name: str) -> socket.socket:
    label = f"fd {fd}" + (f" ({name})" if name else "")
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        raise ActivationError(f"LISTEN_FDS: {label} is not open") from None
    if not stat.S_ISSOCK(mode):
        raise ActivationError(f"LISTEN_FDS: {label} is not a socket")
    sock = socket.socket(fileno=fd)  # family and type read from the fd
    sock.set_inheritable(False)  # a tool's child process must not hold our listener open
    if sock.type != socket.SOCK_STREAM:
        raise ActivationError(f"{label} is not a stream socket (use ListenStream=, not ListenDatagram=)")
    accepting = getattr(socket, "SO_ACCEPTCONN", None)
    if accepting is not None and not sock.getsockopt(socket.SOL_SOCKET, accepting):
        raise ActivationError(f"{label} is not listening (a connection socket: use Accept=no in the unit)")
    return sock


def _role(fd: int, name: str, sock: socket.socket) -> str:
    family = sock.family
    unix = family == getattr(socket, "AF_UNIX", None)
    tcp = family in (socket.AF_INET, socket.AF_INET6)
    family_name = getattr(family, "name", str(family))
    if name == "rpc" and not unix:
        raise ActivationError(f"fd {fd} is named rpc but is an {family_name} socket, not a Unix socket")
    if name == "gateway" and not tcp:
        raise ActivationError(f"fd {fd} is named gateway but is an {family_name} socket, not TCP")
    if name in _ROLES:
        return name
    if unix:
        return "rpc"
    if tcp:
        return "gateway"
    raise ActivationError(f"fd {fd} is an {family_name} socket: neither a Unix endpoint nor a TCP gateway")


def _shown(value: str) -> str:
    """A variable's value in an error message: quoted, and cut short (it is garbage, possibly long)."""
    return repr(value if len(value) <= 32 else value[:32] + "...")
