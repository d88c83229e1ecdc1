"""One daemon per database (R-STORE-1, docs/operations.md): two config dirs (two sockets, two endpoint locks) that
name the same `[storage] url` cannot both serve it. On SQLite that is the same file; in the PostgreSQL pass it is
the same server database (an advisory lock).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Any

import db_backend
import pytest
from e2e_harness import DaemonFactory

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-STORE-1")]


def shared_config(factory: DaemonFactory) -> Mapping[str, Mapping[str, Any]]:
    """A `[storage]` section both daemons get: a fresh server database, or a SQLite file outside both dirs."""
    root = factory.tmpdir()
    return {"storage": {"url": factory.database_url(root) or db_backend.default_url(root)}}


async def test_a_second_daemon_on_the_same_database_refuses_to_start(daemon_factory: DaemonFactory) -> None:
    config = shared_config(daemon_factory)
    first = daemon_factory.start(config)
    second = daemon_factory.spawn(config)
    assert second.wait_exit(15) == 1, second.describe()
    lines = [line for line in second.stderr_lines if line.strip()]
    assert len(lines) == 1, second.describe()
    assert lines[0].startswith("zeroclaw daemon: another daemon ("), lines
    assert f"(pid {first.pid}" in lines[0] and ") already uses the database " in lines[0], lines
    assert "Traceback" not in second.stderr
    assert not second.socket_path.exists()  # it never listened
    async with await first.client() as client:  # the first one is untouched and still serving
        assert (await client.call("session/list"))["sessions"] == []

    # The lock lives exactly as long as its daemon: once the first is gone, the second starts on the same data.
    assert first.stop() == 0
    third = daemon_factory.start(config, config_dir=second.config_dir, root=second.root)
    async with await third.client() as client:
        await client.call("status")


async def test_the_lock_is_released_when_the_daemon_is_killed(daemon_factory: DaemonFactory) -> None:
    config = shared_config(daemon_factory)
    first = daemon_factory.start(config)
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL  # no clean-up ran: the server (or kernel) drops it
    second = daemon_factory.start(config)
    async with await second.client() as client:
        await client.call("status")


async def test_a_password_in_the_url_is_masked_in_the_refusal() -> None:
    from app.storage.db_lock import DatabaseInUse, acquire

    url = db_backend.server_url()
    if url is None:  # SQLite URLs carry no password; the message is built the same way for both
        from app.storage.errors import masked_url

        assert masked_url("postgresql+asyncpg://zc:s3cret@db.example/zc") == "postgresql+asyncpg://zc:***@db.example/zc"
        return
    held = await acquire(url)
    try:
        with pytest.raises(DatabaseInUse) as info:
            await acquire(url.replace("postgres@", "postgres:s3cret@", 1), retry_secs=0)
        assert "s3cret" not in str(info.value) and "***" in str(info.value), info.value
    finally:
        await held.release()
