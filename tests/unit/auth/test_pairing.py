"""Pairing token store (R-AUTH-4): create, list, revoke, resolve; only the SHA-256 is stored."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.auth.pairing import TOKEN_ID_RE, PairingStore
from app.storage import Database
from app.storage.migrate import upgrade

pytestmark = pytest.mark.req("R-AUTH-4")


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def tick(self, seconds: float = 1) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    url = database_url
    await asyncio.to_thread(upgrade, url)
    database = await Database.open(url)
    yield database
    await database.close()


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    yield FakeClock()


@pytest.fixture
def store(db: Database, clock: FakeClock) -> PairingStore:
    return PairingStore(db, clock=clock)


# R-AUTH-4: token "zc_<64 hex>" shown once, with tokenId, user, createdAt.
async def test_create_returns_record_and_token(store: PairingStore, clock: FakeClock) -> None:
    record, token = await store.create("alice", "phone")
    assert re.fullmatch(r"zc_[0-9a-f]{64}", token)
    assert TOKEN_ID_RE.match(record.token_id)
    assert (record.user, record.label, record.last_used_at) == ("alice", "phone", None)
    assert record.created_at == clock.now


async def test_tokens_and_ids_are_unique(store: PairingStore) -> None:
    created = [await store.create("alice") for _ in range(20)]
    assert len({token for _, token in created}) == 20
    assert len({record.token_id for record, _ in created}) == 20


# R-AUTH-4: only the SHA-256 is stored; the plain token appears nowhere in the database.
async def test_plain_token_is_not_stored(store: PairingStore, db: Database, tmp_path: Path) -> None:
    _, token = await store.create("alice", "laptop")

    def unit(session: Session) -> tuple[Any, list[Any]]:
        stored = session.execute(sa.text("SELECT token_sha256 FROM pairing_tokens")).scalar_one()
        rows = [
            *session.execute(sa.text("SELECT * FROM pairing_tokens")).all(),
            *session.execute(sa.text("SELECT * FROM alembic_version")).all(),
        ]
        return stored, rows

    stored, rows = await db.read(unit)
    dump = "\n".join(repr(row) for row in rows)
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert token not in dump
    assert token[3:] not in dump
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):  # SQLite's main file and the WAL with the commit
        raw = path.read_bytes()
        assert token.encode() not in raw, path.name
        assert token[3:].encode() not in raw, path.name


# R-AUTH-4: pairing/list returns active tokens only, lastUsedAt null before first use.
async def test_list_active_excludes_revoked(store: PairingStore, clock: FakeClock) -> None:
    first, _ = await store.create("alice", "phone")
    clock.tick()
    second, _ = await store.create("bob", None)
    clock.tick()
    third, _ = await store.create("alice", "tablet")
    assert await store.revoke(second.token_id)

    active = await store.list_active()
    assert [r.token_id for r in active] == [first.token_id, third.token_id]
    assert all(r.last_used_at is None for r in active)
    assert [r.token_id for r in await store.list_active(user="alice")] == [first.token_id, third.token_id]
    assert await store.list_active(user="bob") == []


async def test_revoke_reports_whether_it_revoked(store: PairingStore) -> None:
    record, _ = await store.create("alice")
    assert await store.revoke(record.token_id) is True
    assert await store.revoke(record.token_id) is False
    assert await store.revoke("tok_ffffffffffff") is False


async def test_resolve_returns_record_and_stamps_last_used(store: PairingStore, clock: FakeClock) -> None:
    record, token = await store.create("alice", "phone")
    used_at = clock.tick(30)
    resolved = await store.resolve(token)
    assert resolved is not None
    assert (resolved.token_id, resolved.user, resolved.last_used_at) == (record.token_id, "alice", used_at)
    [listed] = await store.list_active()
    assert listed.last_used_at == used_at


# R-AUTH-4 / R-AUTH-3: a revoked token no longer authenticates.
async def test_revoked_token_does_not_resolve(store: PairingStore) -> None:
    record, token = await store.create("alice")
    await store.revoke(record.token_id)
    assert await store.resolve(token) is None


async def test_unknown_and_malformed_tokens_do_not_resolve(store: PairingStore) -> None:
    _, token = await store.create("alice")
    assert await store.resolve("zc_" + "0" * 64) is None
    assert await store.resolve(token.upper()) is None
    assert await store.resolve(token + "0") is None
    assert await store.resolve(token[3:]) is None
    assert await store.resolve("") is None


# R-AUTH-4 / R-AUTH-5: the authorization gate watches `generation` to re-check cached principals.
async def test_generation_bumps_on_create_and_effective_revoke(store: PairingStore) -> None:
    assert store.generation == 0
    record, token = await store.create("alice")
    assert store.generation == 1
    await store.resolve(token)
    await store.list_active()
    assert store.generation == 1
    assert await store.revoke(record.token_id)
    assert store.generation == 2
    assert not await store.revoke(record.token_id)  # nothing changed, nothing to re-check
    assert store.generation == 2


async def test_times_are_aware_utc(db: Database) -> None:
    record, token = await PairingStore(db).create("alice")
    resolved = await PairingStore(db).resolve(token)
    assert resolved is not None
    assert record.created_at.tzinfo is UTC
    assert resolved.last_used_at is not None
    assert resolved.last_used_at.tzinfo is UTC
