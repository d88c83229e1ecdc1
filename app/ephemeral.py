"""Ephemeral mode (R-EPH-1): exit about `grace` seconds after the last client leaves, never before the first."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["EphemeralWatch"]


class EphemeralWatch:
    def __init__(self, grace_secs: float, on_idle: Callable[[], None]) -> None:
        self._grace = grace_secs
        self._on_idle = on_idle
        self._seen_client = False
        self._count = 0
        self._timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """Count the start itself as a client's (socket activation, R-SVC-1): the on-demand daemon was started by
        a connection, so it ends `grace` seconds after the last client, or after start-up if none ever came
        (the connection that woke it may have gone, or been a gateway request, which is not counted)."""
        self._seen_client = True
        self.connections_changed(self._count)

    def connections_changed(self, count: int) -> None:
        self._count = count
        if count > 0:
            self._seen_client = True
            if self._timer is not None:
                self._timer.cancel()  # a reconnect within the grace period keeps the daemon alive
                self._timer = None
        elif self._seen_client and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._grace, self._on_idle)
