"""Storage opened by the first call that needs it: the daemon's fast start (docs/operations.md, "Start-up").

A daemon whose SQLite database is already at the newest revision has nothing to migrate, so it needs neither
Alembic nor SQLAlchemy, the models or the stores until a call reads or writes: importing them costs ~0.1 s of
start-up and ~18 MiB that a daemon only answering `status` never uses. `DeferredStorage` hands out stand-ins for the
stores (`stand_in(build)`). The first method call on any stand-in awaits `open()` once (the daemon's opener imports
off the event loop, then opens the database as an eager start would), builds every store on that database, and from
then on every stand-in hands out its store's own attributes.

Before that first call a stand-in offers what the session registry, the paired tokens and the surfaces use of a
store: coroutine methods (`await stand_in.method(...)`); the plain methods named `kept`, which answer from what the
store keeps in memory, or None when it has to read (`SessionStore.lists.kept_page`), and before the open nothing is
kept; and the store's `parts` (`store.transcript`, `store.lists`), stand-ins of the same kind for the store's
attribute of that name (a part's kept method is named `part.method`). A failed open is not remembered: the call
that asked gets the error (mapped like any storage error), and the next call tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from app.storage.database import Database

__all__ = ["DeferredStorage"]

T = TypeVar("T")


class DeferredStorage:
    def __init__(self, open_database: Callable[[], Awaitable[Database]]) -> None:
        self._open = open_database
        self._opening = asyncio.Lock()
        self._stand_ins: list[_StandIn[Any]] = []
        self.database: Database | None = None  # set once the first call has opened it

    def stand_in(
        self, build: Callable[[Database], T], *, kept: frozenset[str] = frozenset(), parts: frozenset[str] = frozenset()
    ) -> T:
        """An object that acts as `build(database)` once the database is open (typed as that object); before,
        its `kept` methods answer None (nothing kept yet) without opening it, and each of its `parts` is such an
        object for the store's attribute of that name."""
        stand_in = _StandIn(self, build, kept, parts)
        self._stand_ins.append(stand_in)
        return cast("T", stand_in)

    async def opened(self) -> Database:
        """The database, opened (and every store built) by the first caller; concurrent callers share that open."""
        if self.database is None:
            async with self._opening:
                if self.database is None:
                    database = await self._open()
                    for stand_in in self._stand_ins:
                        stand_in.target = stand_in.build(database)
                    self.database = database
        return self.database

    async def close(self) -> None:
        async with self._opening:  # an open under way finishes first, so its connections are released too
            if self.database is not None:
                await self.database.close()


class _StandIn(Generic[T]):
    __slots__ = ("build", "kept", "parts", "storage", "target")

    def __init__(
        self, storage: DeferredStorage, build: Callable[[Database], T], kept: frozenset[str], parts: frozenset[str]
    ) -> None:
        self.storage = storage
        self.build = build
        self.kept = kept
        self.parts = {name: _Part(self, name) for name in parts}
        self.target: T | None = None

    def __getattr__(self, name: str) -> Any:
        target = self.target
        if target is not None:
            return getattr(target, name)
        if name.startswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probing: not a store method
        part = self.parts.get(name)
        if part is not None:
            return part
        if name in self.kept:
            return _nothing_kept

        async def first_call(*args: Any, **kwargs: Any) -> Any:
            await self.storage.opened()
            return await getattr(self.target, name)(*args, **kwargs)

        return first_call


class _Part:
    """`store.<name>` before the open: coroutine methods open storage, kept ones (`<name>.<method>`) answer None."""

    __slots__ = ("name", "owner")

    def __init__(self, owner: _StandIn[Any], name: str) -> None:
        self.owner = owner
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        owner = self.owner
        if owner.target is not None:
            return getattr(getattr(owner.target, self.name), attr)
        if attr.startswith("__"):
            raise AttributeError(attr)
        if f"{self.name}.{attr}" in owner.kept:
            return _nothing_kept

        async def first_call(*args: Any, **kwargs: Any) -> Any:
            await owner.storage.opened()
            return await getattr(getattr(owner.target, self.name), attr)(*args, **kwargs)

        return first_call


def _nothing_kept(*args: Any, **kwargs: Any) -> None:
    return None
