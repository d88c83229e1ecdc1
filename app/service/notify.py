"""Readiness messages to the service manager (R-SVC-2): systemd's `sd_notify` protocol, written out.

`NOTIFY_SOCKET` names an AF_UNIX datagram socket (a path, or `@name` for an abstract one); each message is one
datagram of `KEY=VALUE` lines. The daemon sends `READY=1` once every listener serves, `RELOADING=1` with
`MONOTONIC_USEC=` and then `READY=1` around a config reload, `STOPPING=1` at shutdown, and `WATCHDOG=1` every
half `WATCHDOG_USEC` when that is set for this process. A manager that went away never stops or slows the daemon:
the send does not block, and its first failure is logged once at debug.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, MutableMapping

__all__ = ["ENV", "Notifier", "from_env"]

log = logging.getLogger("zeroclaw.notify")

ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


class Notifier:
    """Sends `sd_notify` datagrams to `address` (a path, or `@name`); the watchdog every `watchdog_usec`/2."""

    def __init__(self, address: str, *, watchdog_usec: int | None = None) -> None:
        # A leading @ names an abstract socket (systemd's convention): a NUL byte on the wire.
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self._watchdog_usec = watchdog_usec
        self._sock: socket.socket | None = None
        self._failed = False
        self._watchdog: asyncio.TimerHandle | None = None
        self.status: Callable[[], str] = lambda: "serving"  # the STATUS= line sent with each READY=1

    def send(self, *lines: str) -> bool:
        """One datagram of `lines`; False (the daemon carries on) when the manager cannot be reached."""
        try:
            if self._sock is None:
                self._sock = _datagram_socket()
                self._sock.setblocking(False)
            self._sock.sendto("\n".join(lines).encode(), self._address)
        except OSError as exc:
            if not self._failed:  # once: a manager that is gone stays gone
                self._failed = True
                log.debug("NOTIFY_SOCKET cannot be reached (%s); readiness messages are dropped", exc.strerror)
            return False
        return True

    def ready(self) -> None:
        self.send("READY=1", f"STATUS={self.status()}")

    def reloading(self) -> None:
        self.send("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}", "STATUS=reloading config.toml")

    def reloaded(self) -> None:
        self.ready()

    def stopping(self) -> None:
        self.stop_watchdog()
        self.send("STOPPING=1", "STATUS=stopping")

    def start_watchdog(self) -> None:
        """`WATCHDOG=1` now and every half period, from the event loop: a loop that hangs stops the pings."""
        if self._watchdog_usec is None or self._watchdog is not None:
            return
        period = self._watchdog_usec / 2 / 1e6
        loop = asyncio.get_running_loop()

        def ping() -> None:
            self.send("WATCHDOG=1")
            self._watchdog = loop.call_later(period, ping)

        ping()

    def stop_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def close(self) -> None:
        self.stop_watchdog()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None


def _datagram_socket() -> socket.socket:
    if sys.platform == "win32":  # no service manager speaks this there; the daemon never asks on Windows
        raise OSError("AF_UNIX datagrams are not available on Windows")
    return socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # close-on-exec, as every Python socket


def from_env(env: MutableMapping[str, str] | None = None, *, pid: int | None = None) -> Notifier | None:
    """The notifier `NOTIFY_SOCKET` asks for, or None. The variables are removed from `env`, so a tool's child
    process cannot speak for the daemon. A `WATCHDOG_USEC` garbled, or meant for another pid, is ignored."""
    env = os.environ if env is None else env
    address, usec_text, watchdog_pid = (env.pop(key, None) for key in ENV)
    if not address:
        return None
    usec: int | None = None
    ours = watchdog_pid is None or watchdog_pid.strip() == str(os.getpid() if pid is None else pid)
    if usec_text is not None and usec_text.strip().isdigit() and int(usec_text) > 0 and ours:
        usec = int(usec_text)
    elif usec_text is not None:
        log.debug("WATCHDOG_USEC is not for this process or not a number: no watchdog pings")
    return Notifier(address, watchdog_usec=usec)
