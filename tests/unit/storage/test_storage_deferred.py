"""`DeferredStorage`: the first call that needs storage opens it once, for every stand-in; a failed open is retried."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from app.storage.deferred import DeferredStorage


class FakeDatabase:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Lists:
    async def page(self, key: str) -> str:
        return f"page {key}"

    def kept_page(self, key: str) -> str | None:
        return f"kept page {key}"


class Store:
    def __init__(self, db: FakeDatabase) -> None:
        self.db = db
        self.generation = 7
        self.lists = Lists()

    async def get(self, key: str, *, suffix: str = "") -> str:
        return key + suffix

    def kept_get(self, key: str) -> str | None:
        return f"kept {key}"


class Opener:
    def __init__(self, fail: int = 0) -> None:
        self.calls = 0
        self.fail = fail
        self.database = FakeDatabase()

    async def __call__(self) -> Any:
        self.calls += 1
        await asyncio.sleep(0.01)
        if self.calls <= self.fail:
            raise OSError("not yet")
        return self.database


async def test_the_first_call_opens_once_for_every_stand_in() -> None:
    opener = Opener()
    storage = DeferredStorage(opener)
    first, second = storage.stand_in(Store), storage.stand_in(Store)
    assert opener.calls == 0 and storage.database is None
    results = await asyncio.gather(first.get("a"), second.get("b", suffix="!"), first.get("c"))
    assert results == ["a", "b!", "c"]
    assert opener.calls == 1
    assert cast("Any", first).target.db is opener.database is cast("Any", second).target.db
    assert first.generation == 7  # once open, every attribute is the store's own
    await storage.close()
    assert opener.database.closed


async def test_a_kept_method_answers_none_before_the_open_without_opening_then_the_stores_own() -> None:
    # `session/list` asks the store's kept lists first: before any call opened storage, nothing is kept.
    opener = Opener()
    storage = DeferredStorage(opener)
    store = storage.stand_in(Store, kept=frozenset({"kept_get"}))
    assert store.kept_get("a") is None and opener.calls == 0
    assert await store.get("a") == "a"
    assert store.kept_get("a") == "kept a"
    await storage.close()


async def test_a_part_of_the_store_stands_in_too_before_the_open() -> None:
    # Regression: `store.lists.kept_page` on a stand-in made the first `session/list` after a restart an internal
    # error ('function' object has no attribute 'kept_page'): a store's parts are stand-ins of their own.
    opener = Opener()
    storage = DeferredStorage(opener)
    store = storage.stand_in(Store, kept=frozenset({"lists.kept_page"}), parts=frozenset({"lists"}))
    assert store.lists.kept_page("a") is None and opener.calls == 0
    assert await store.lists.page("a") == "page a" and opener.calls == 1
    assert store.lists.kept_page("a") == "kept page a"
    assert isinstance(store.lists, Lists)  # once open, the store's own part
    await storage.close()


async def test_a_failed_open_reaches_the_caller_and_the_next_call_tries_again() -> None:
    opener = Opener(fail=1)
    storage = DeferredStorage(opener)
    store = storage.stand_in(Store)
    with pytest.raises(OSError, match="not yet"):
        await store.get("x")
    assert storage.database is None
    assert await store.get("y") == "y"
    assert opener.calls == 2


async def test_closing_storage_never_opened_opens_nothing() -> None:
    opener = Opener()
    storage = DeferredStorage(opener)
    storage.stand_in(Store)
    await storage.close()
    assert opener.calls == 0
