"""The Unix-domain-socket listener: owner-only from the first instant, never steals a live socket.

The socket is bound under `umask(0o177)` so it is created 0600 (R-SEC-1); the caller has already made its
directory 0700 and holds the endpoint lock (R-PATH-4). Connections are served by the shared
`NdjsonProtocol`; this module only adds the listener and the SO_PEERCRED peer label (R-SEC-3).

An inherited socket (socket activation, R-SVC-1) is served as it is: its path belongs to the service manager,
so it is never cleared, bound, chmod-ed or removed here.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import stat
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rpc.transports.base import Peer

__all__ = ["EndpointError", "UnixListener", "peer_of", "serve_inherited", "serve_unix"]

_BACKLOG = 1024


class EndpointError(Exception):
    """The endpoint path cannot be used; the message says why, naming the path."""


@dataclass(slots=True)
class UnixListener:
    path: Path
    server: asyncio.AbstractServer
    inode: tuple[int, int] | None  # None: an inherited socket, whose file is the service manager's

    def remove_socket_file(self) -> None:
        """Unlink the socket only if it is still the one we bound (another process may have replaced it)."""
        if self.inode is None:
            return
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if (st.st_dev, st.st_ino) == self.inode:
            os.unlink(self.path)


def peer_of(transport: asyncio.BaseTransport) -> Peer:
    sock = transport.get_extra_info("socket")
    if sys.platform == "linux" and sock is not None:
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", creds)
            return Peer(f"unix:pid={pid},uid={uid}", uid=uid, pid=pid)
        except OSError:
            pass
    uid = _getpeereid(sock)
    return Peer("unix:unknown", uid=uid)


def _getpeereid(sock: socket.socket | None) -> int | None:
    # Other Unixes: LOCAL_PEERCRED/getpeereid are not exposed by Python; the uid stays unknown there.
    return None


def _clear_stale(path: Path) -> None:
    if sys.platform == "win32":
        raise EndpointError(f"{path}: Windows serves a named pipe (rpc.transports.pipe), not a Unix socket")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise EndpointError(f"{path} exists and is not a socket; refusing to touch it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)  # nobody listens: a leftover of a daemon that died (R-PATH-5)
        return
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            os.unlink(path)
            return
        reason = exc.strerror
        raise EndpointError(f"{path} is a socket that cannot be probed ({reason}); refusing to replace it") from None
    finally:
        probe.close()
    raise EndpointError(f"{path} is a live socket served by another process; refusing to replace it")


async def serve_unix(path: Path, protocol_factory: Callable[[], asyncio.Protocol]) -> UnixListener:
    if sys.platform == "win32":
        raise EndpointError(f"{path}: Windows serves a named pipe (rpc.transports.pipe), not a Unix socket")
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    except OSError as exc:
        sock.close()
        raise EndpointError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
    st = os.lstat(path)
    loop = asyncio.get_running_loop()
    server = await loop.create_unix_server(protocol_factory, sock=sock, backlog=_BACKLOG)
    return UnixListener(path, server, (st.st_dev, st.st_ino))


async def serve_inherited(
    sock: socket.socket, path: Path, protocol_factory: Callable[[], asyncio.Protocol]
) -> UnixListener:
    """Serve a listening socket a service manager passed (R-SVC-1); its file stays where and as it is."""
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 13) and isinstance(loop, asyncio.BaseEventLoop):
        # asyncio 3.13+ unlinks the path when the server closes; the next activation needs it
        # (uvloop never does).
        server = await loop.create_unix_server(protocol_factory, sock=sock, backlog=_BACKLOG, cleanup_socket=False)
    else:
        server = await loop.create_unix_server(protocol_factory, sock=sock, backlog=_BACKLOG)
    return UnixListener(path, server, None)
