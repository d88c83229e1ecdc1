"""Whose calls a shared MCP server is running: one zeroclaw session's at a time (R-MCP-3, elicitation routing).

An MCP server's `elicitation/create` says nothing the client can read about which `tools/call` caused it (the SDK
relates them only inside HTTP transports, as the stream a request rides; over stdio nothing relates them, and the
SDK's `ClientRequestContext` carries the elicitation's own id and `_meta` alone). So calls from different sessions
to one server take turns: while a session's calls run, another session's call waits for them to end, and any
elicitation that comes meanwhile belongs to the session holding the floor. Calls of one session do not wait for
each other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

__all__ = ["Floor"]

T = TypeVar("T")


class Floor(Generic[T]):
    """Held by one holder (with a value of its own, e.g. its elicitation callback) for as long as its calls run."""

    def __init__(self) -> None:
        self.holder: str | None = None
        self.value: T | None = None
        self._calls = 0
        self._free = asyncio.Event()
        self._free.set()

    @asynccontextmanager
    async def held(self, holder: str, value: T) -> AsyncIterator[None]:
        while self.holder not in (None, holder):
            await self._free.wait()
        self.holder, self.value = holder, value
        self._calls += 1
        self._free.clear()
        try:
            yield
        finally:
            self._calls -= 1
            if not self._calls:
                self.holder, self.value = None, None
                self._free.set()
