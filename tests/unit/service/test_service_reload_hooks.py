"""`ConfigWatcher`'s hooks, which the daemon's notifier is (R-SVC-2): RELOADING=1 / READY=1 around a reload whose
bytes changed, or a SIGHUP; nothing for a look that finds the file as last loaded or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.config.reload import ConfigWatcher
from app.config.store import ConfigStore

pytestmark = pytest.mark.req("R-SVC-2")


class Hooks:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def reloading(self) -> None:
        self.calls.append("reloading")

    def reloaded(self) -> None:
        self.calls.append("reloaded")


def edit(path: Path, text: str) -> None:
    tmp = path.with_name("config.toml.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def test_told_around_a_changed_file_and_a_sighup_only(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[limits]\nmax_sessions = 10\n")
    hooks = Hooks()
    watcher = ConfigWatcher(ConfigStore(tmp_path), settle=0.01, hooks=hooks)
    await watcher.check()  # the first look: the bytes as loaded at start
    assert hooks.calls == []

    edit(path, "[limits]\nmax_sessions = 11\n")
    assert (await watcher.check()) is not None
    assert hooks.calls == ["reloading", "reloaded"]

    edit(path, "[limits]\nmax_sessions = [not toml\n")  # refused: the running config stays, and serves again
    await watcher.check()
    assert hooks.calls == ["reloading", "reloaded"] * 2

    hooks.calls.clear()
    await watcher.check(forced=True)  # SIGHUP: told even when nothing changed
    assert hooks.calls == ["reloading", "reloaded"]

    edit(path, "[limits]\nmax_sessions = 12\n")
    await watcher.check()
    hooks.calls.clear()
    os.utime(path, ns=(1, 1))  # a touch: the signature moves, the bytes do not
    await watcher.check()
    assert hooks.calls == []
