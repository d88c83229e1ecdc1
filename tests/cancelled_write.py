"""A store write whose caller is cancelled while its unit runs: the unit commits (a started unit always finishes)
but the caller never hears of it. The store's caches must not keep what they held before the row
(tests/unit/sessions/test_store_context_cache.py, test_store_lists.py)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.sessions.store.session_store import SessionStore
from app.storage import Database

__all__ = ["append_cancelled_mid_write"]


async def append_cancelled_mid_write(
    store: SessionStore,
    db: Database,
    monkeypatch: pytest.MonkeyPatch,
    session_id: str,
    meanwhile: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Append a user row "hi" to `session_id`, cancel its caller while the unit runs, await `meanwhile` (the
    caller is gone, the row not yet committed), and return once it committed and the store heard of its end."""
    started, release = threading.Event(), threading.Event()
    unit = store._units.backend.append  # the store's own (`SqliteBackend` on SQLite)

    def slow_append(*args: Any) -> int:
        index: int = unit(*args)
        started.set()
        assert release.wait(10)
        return index

    monkeypatch.setattr(store._units.backend, "append", slow_append)
    task = asyncio.ensure_future(
        store.transcript.append(session_id, role="user", content="hi", turn_id="t1", surface="rpc")
    )
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if meanwhile is not None:
        await meanwhile()
    release.set()
    await db.write(lambda _s: None)  # the writer has finished the append
    await asyncio.sleep(0)  # and the store's own write queued after it has told its caches
