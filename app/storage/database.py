"""The `Database` facade: one writer at a time, any number of readers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.storage.engine import create_engine

__all__ = ["Database"]


class Database:
    """Owns the engine. Writes go through `write()`, serialized by an asyncio.Lock.

    SQLite has a single writer per file anyway; queueing writers here instead of in SQLite's busy handler
    keeps waiting cheap and fair, and never surfaces `database is locked` from inside the daemon.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        # Rows stay readable after commit: services hand them back once the session is gone.
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str) -> Database:
        engine = create_engine(url)
        try:
            # Connect once so a bad URL or an unreadable file fails at start, not at the first request.
            async with engine.connect():
                pass
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine)

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def close(self) -> None:
        # Let an in-flight write commit first: shutdown flushes, it does not cut a transaction short.
        async with self._write_lock:
            await self._engine.dispose()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction that commits on normal exit and rolls back on an exception."""
        async with self._write_lock, self._sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for queries; anything it changes is discarded (rolled back) on exit."""
        async with self._sessions() as session:
            yield session
