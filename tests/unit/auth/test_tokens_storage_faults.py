"""Resolving a paired token stamps `last_used_at`, a write. While storage refuses writes (R-STORE-3), a token this
daemon has already resolved keeps working; an unknown one, a revoked one, or any other failure does not."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from app.auth.pairing import PairingRecord
from app.auth.tokens import PairedTokens

pytestmark = pytest.mark.req("R-STORE-3")

TOKEN = "zc_" + "a" * 64
OTHER = "zc_" + "b" * 64


def read_only() -> sqlite3.OperationalError:
    con = sqlite3.connect(":memory:")
    con.execute("PRAGMA query_only=ON")
    try:
        con.execute("CREATE TABLE t (x)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        con.close()
    raise AssertionError("query_only should refuse the write")


class Store:
    def __init__(self) -> None:
        self.failure: BaseException | None = None

    async def resolve(self, token: str) -> PairingRecord | None:
        if self.failure is not None:
            raise self.failure
        if token != TOKEN:
            return None
        return PairingRecord("tok_000000000001", "alice", None, datetime.now(UTC), None)

    async def revoke(self, token_id: str) -> bool:
        return True


def tokens() -> tuple[PairedTokens, Store]:
    store = Store()
    paired = PairedTokens(store)  # type: ignore[arg-type]
    paired.on_change = lambda: None
    return paired, store


async def test_a_token_seen_before_still_resolves_while_storage_is_read_only() -> None:
    paired, store = tokens()
    assert await paired.resolve(TOKEN) == ("tok_000000000001", "alice")
    store.failure = read_only()
    assert await paired.resolve(TOKEN) == ("tok_000000000001", "alice")
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(OTHER)  # never seen: it cannot be checked, so the fault is reported


async def test_a_revoked_token_or_another_failure_is_not_covered() -> None:
    paired, store = tokens()
    await paired.resolve(TOKEN)
    store.failure = RuntimeError("a bug, not the disk")
    with pytest.raises(RuntimeError):
        await paired.resolve(TOKEN)
    store.failure = None
    await paired.revoke("tok_000000000001")
    store.failure = read_only()
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(TOKEN)


async def test_a_token_that_stopped_resolving_is_forgotten(monkeypatch: Any) -> None:
    paired, store = tokens()
    await paired.resolve(TOKEN)
    monkeypatch.setattr(store, "resolve", _none)
    assert await paired.resolve(TOKEN) is None  # revoked elsewhere, or deleted
    monkeypatch.undo()
    store.failure = read_only()
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(TOKEN)


async def _none(token: str) -> None:
    return None
