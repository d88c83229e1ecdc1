"""Edits to config.toml picked up while the daemon runs (R-CFG-6): a stat poll, and SIGHUP.

    stat every [daemon] config_poll_secs (0.5 s) ── changed? ── settled (unchanged for 0.2 s) ──┐
    SIGHUP (`request()`) ───────────────────────────────────────────────────────────────────────┴─> reload

`ConfigStore.reload` does the work under the config write lock: it reads the whole file, validates it, installs
the difference as a `config/set-many` would and logs the props that changed; it never writes the file. This
module logs the other outcomes. The daemon's own writes move the file's stat too, but then the bytes are the ones
the store just wrote, so the reload is a no-op.

An invalid file (a typo, or an editor caught half-way through writing in place) is logged once with the path and
the failing line or field, never a value, and the running config stays; the next change is looked at afresh.
The settle wait keeps a file being written in several steps from being read in the middle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

from app.config.errors import ConfigFileError
from app.config.store import ConfigStore, Reloaded

__all__ = ["AT_START", "SETTLE_SECS", "ConfigWatcher", "ReloadHooks", "signature"]

log = logging.getLogger(__name__)

SETTLE_SECS = 0.2
MAX_SETTLE_ROUNDS = 5  # a file rewritten non-stop is read anyway after ~1 s
IDLE_SECS = 1.0  # with the poll off, how often the interval itself is looked at again
# Read once at start-up (listener, database, ephemeral timer): a change applies at the next start.
AT_START = (
    "gateway.host",
    "gateway.port",
    "gateway.tls_cert",
    "gateway.tls_key",
    "wss.",  # the whole [wss] listener (R-SVC-4)
    "storage.url",
    "daemon.ephemeral_grace_secs",
    "telemetry.",  # the tracer (R-MODEL-6)
)

Signature = tuple[int, ...] | None


def signature(path: Path) -> Signature:
    """What changes when the file does: inode (an editor's rename), size, mtime, ctime. None when absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return (-1, exc.errno or 0)  # unreadable: compared like any other state, so it is reported once
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ReloadHooks(Protocol):
    """Told before and after each reload (the service manager's `RELOADING=1` / `READY=1`, R-SVC-2)."""

    def reloading(self) -> None: ...

    def reloaded(self) -> None: ...


_UNSEEN: Signature = (-2,)  # the first poll always compares the bytes, so an edit made during start-up counts


class ConfigWatcher:
    """Polls `store.path` every `[daemon] config_poll_secs` (read live; 0 = off) and reloads it on a change, or
    at once on `request()` (SIGHUP)."""

    def __init__(self, store: ConfigStore, *, settle: float = SETTLE_SECS, hooks: ReloadHooks | None = None) -> None:
        self._store = store
        self.hooks = hooks
        self._settle = settle
        self._seen: Signature = _UNSEEN
        self._requested = asyncio.Event()

    def request(self) -> None:
        """Reload now, whether or not the file looks changed (the SIGHUP handler)."""
        self._requested.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ConfigWatcher]:
        task = asyncio.create_task(self.run(), name="config-watcher")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        while True:
            poll = self._store.current.daemon.config_poll_secs
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._requested.wait(), poll or IDLE_SECS)
            forced = self._requested.is_set()
            self._requested.clear()
            if not forced and not poll:
                continue
            try:
                await self.check(forced=forced)
            except Exception as exc:  # the watcher must outlive any surprise; the type only, never a value
                log.error("config reload failed: %s; the running config stays", type(exc).__name__)

    async def check(self, *, forced: bool = False) -> Reloaded | None:
        """One look at the file; reloads it when its signature moved (or when `forced`). None: not reloaded."""
        sig = signature(self._store.path)
        if not forced:
            if sig == self._seen:
                return None
            sig = await self._settled(sig)
        # Recorded before reading: a write landing meanwhile moves the signature again, and is read next.
        self._seen = sig
        return await self._reload("SIGHUP" if forced else "file changed")

    async def _settled(self, sig: Signature) -> Signature:
        for _ in range(MAX_SETTLE_ROUNDS):
            await asyncio.sleep(self._settle)
            again = signature(self._store.path)
            if again == sig:
                break
            sig = again
        return sig

    async def _reload(self, trigger: str) -> Reloaded | None:
        """Reload, telling `hooks` around it when the bytes changed or on SIGHUP (not for our own writes)."""
        hooks = self.hooks
        if hooks is None:
            return await self._load(trigger, None)
        told: list[bool] = []

        def tell() -> None:
            if not told:
                told.append(True)
                hooks.reloading()

        if trigger == "SIGHUP":
            tell()
        try:
            return await self._load(trigger, tell)
        finally:
            if told:
                hooks.reloaded()  # the running config serves again, the new one or (a bad file) the old

    async def _load(self, trigger: str, on_change: Callable[[], None] | None) -> Reloaded | None:
        path = self._store.path
        try:
            result = await self._store.reload(on_change=on_change)
        except ConfigFileError as exc:
            log.error("%s: not loaded (%s), the running config stays: %s", path, trigger, exc.message)
            return None
        except OSError as exc:
            log.error("%s: cannot read it (%s, errno %s); the running config stays", path, trigger, exc.errno)
            return None
        if result.missing:
            if result.file_changed:  # it was there, and is gone
                log.warning("%s is missing; the running config stays (the next config write re-creates it)", path)
            elif trigger == "SIGHUP":  # none was ever read (a fresh install): the file is optional, not missing
                log.info("%s does not exist (it is optional): nothing to reload (SIGHUP)", path)
        elif result.changed:
            later = [p for p in result.changed if p.startswith(AT_START)]
            if later:
                log.warning("%s: applies at the next start: %s", path, ",".join(later))
        elif result.file_changed:
            log.info("%s re-read (%s): no setting changed", path, trigger)
        elif trigger == "SIGHUP":
            log.info("%s unchanged since it was last loaded (SIGHUP)", path)
        return result
