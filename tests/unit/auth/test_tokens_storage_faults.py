"""Resolving a paired token stamps `last_used_at`, a write, at most once a `recheck_secs` per token; in between the
token is answered from memory. While storage refuses writes (R-STORE-3), a token this daemon has already resolved
keeps working; an unknown one, a revoked one, or any other failure does not."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from app.auth.pairing import PairingRecord
from app.auth.tokens import RECHECK_SECS, PairedTokens

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
        self.resolved = 0

    async def resolve(self, token: str) -> PairingRecord | None:
        self.resolved += 1
        if self.failure is not None:
            raise self.failure
        if token != TOKEN:
            return None
        return PairingRecord("tok_000000000001", "alice", None, datetime.now(UTC), None)

    async def revoke(self, token_id: str) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def pass_recheck(self) -> None:
        self.now += RECHECK_SECS


def tokens(clock: Clock | None = None) -> tuple[PairedTokens, Store]:
    store = Store()
    paired = PairedTokens(store, clock=clock or Clock())  # type: ignore[arg-type]
    paired.on_change = lambda: None
    return paired, store


async def test_a_resolved_token_is_answered_from_memory_until_the_recheck_is_due() -> None:
    clock = Clock()
    paired, store = tokens(clock)
    for _ in range(3):
        assert await paired.resolve(TOKEN) == ("tok_000000000001", "alice")
    assert store.resolved == 1  # one write stamping `last_used_at`, not one per connect
    clock.now += RECHECK_SECS - 1
    await paired.resolve(TOKEN)
    assert store.resolved == 1
    clock.now += 1
    await paired.resolve(TOKEN)
    assert store.resolved == 2  # due again: the store resolves and stamps
    assert await paired.resolve(OTHER) is None and await paired.resolve(OTHER) is None
    assert store.resolved == 4  # an unknown token is never remembered


async def test_a_token_revoked_here_is_never_answered_from_memory() -> None:
    paired, store = tokens()
    await paired.resolve(TOKEN)
    assert await paired.revoke("tok_000000000001")
    store.failure = RuntimeError("the store is asked, and says no")
    with pytest.raises(RuntimeError):
        await paired.resolve(TOKEN)
    assert not paired.is_active("tok_000000000001")


async def test_a_token_seen_before_still_resolves_while_storage_is_read_only() -> None:
    clock = Clock()
    paired, store = tokens(clock)
    assert await paired.resolve(TOKEN) == ("tok_000000000001", "alice")
    store.failure = read_only()
    clock.pass_recheck()  # the store is asked, and refuses the stamp
    assert await paired.resolve(TOKEN) == ("tok_000000000001", "alice")
    assert store.resolved == 2
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(OTHER)  # never seen: it cannot be checked, so the fault is reported


async def test_a_revoked_token_or_another_failure_is_not_covered() -> None:
    clock = Clock()
    paired, store = tokens(clock)
    await paired.resolve(TOKEN)
    clock.pass_recheck()
    store.failure = RuntimeError("a bug, not the disk")
    with pytest.raises(RuntimeError):
        await paired.resolve(TOKEN)
    store.failure = None
    await paired.revoke("tok_000000000001")
    store.failure = read_only()
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(TOKEN)


async def test_a_token_that_stopped_resolving_is_forgotten(monkeypatch: Any) -> None:
    clock = Clock()
    paired, store = tokens(clock)
    await paired.resolve(TOKEN)
    clock.pass_recheck()
    monkeypatch.setattr(store, "resolve", _none)
    assert await paired.resolve(TOKEN) is None  # revoked elsewhere, or deleted
    monkeypatch.undo()
    store.failure = read_only()
    with pytest.raises(sqlite3.OperationalError):
        await paired.resolve(TOKEN)


async def _none(token: str) -> None:
    return None
