"""What a lazy load made is frozen out of the cyclic GC (issue 16, docs/limits.md "Garbage", `app.gc_freeze`):
the storage opened by the first call that needs it, and the gateway's app built by its first request."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.daemon import _open_deferred
from app.self_metrics import Observations
from gateway.server import AppOnFirstRequest

pytestmark = pytest.mark.req("R-LIM")


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process's objects go back to the collector


def test_the_storage_opened_by_the_first_call_is_frozen(tmp_path: Path) -> None:
    async def run() -> None:
        database = await _open_deferred(tmp_path, Observations())
        try:
            assert gc.get_freeze_count() > 0
        finally:
            await database.close()

    asyncio.run(run())


def test_the_gateway_app_built_by_the_first_request_is_frozen_once() -> None:
    builds: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})

    def build() -> Any:
        builds.append(gc.get_freeze_count())
        return app

    async def run() -> None:
        lazy = AppOnFirstRequest("json", build)
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        await lazy({"type": "http"}, None, send)
        frozen = gc.get_freeze_count()
        assert builds == [0] and frozen > 0  # frozen after the build, with what it made
        await lazy({"type": "http"}, None, send)
        assert builds == [0] and len(sent) == 2

    asyncio.run(run())
