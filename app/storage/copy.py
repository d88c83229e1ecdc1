"""`zeroclaw db copy`: move every row of one database into another, empty one (docs/operations.md).

The way from SQLite to PostgreSQL (or back, or between two servers): with no daemon on either database (both are
locked as a daemon would lock them, so a running one makes the copy refuse), the source and then the target are
brought to the newest schema by the same Alembic chain, the target must hold no rows, and every table is copied
in foreign-key order, in batches, inside ONE target transaction: a copy that fails half-way leaves the target
empty. Row counts are compared before the commit. The source is only read (after its upgrade, which is what the
daemon would do at its next start anyway).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage import db_lock
from app.storage.engine import create_engine, sqlite_path
from app.storage.errors import masked_url

__all__ = ["BATCH_ROWS", "CopyError", "CopyResult", "copy_database"]

BATCH_ROWS = 1000


class CopyError(Exception):
    """Why the copy refused or failed; `str()` is one line with no secrets."""


@dataclass(frozen=True, slots=True)
class CopyResult:
    rows: dict[str, int]  # table -> rows copied, in the order copied

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _tables() -> Sequence[Table]:
    from app.storage.models import Base

    return Base.metadata.sorted_tables  # parents before children


async def copy_database(source: str, target: str) -> CopyResult:
    if _same(source, target):
        raise CopyError("--from and --to name the same database")
    path = sqlite_path(source)
    if path is not None and not path.is_file():  # a mistyped path must not become a new, empty source
        raise CopyError(f"no database at {path}")
    from app.storage.migrate import upgrade

    locks: list[db_lock.DatabaseLock] = []
    try:
        for url in (source, target):
            try:
                locks.append(await db_lock.acquire(url, retry_secs=0))
            except db_lock.DatabaseInUse as exc:
                raise CopyError(f"{exc}; stop it first") from None
        for url in (source, target):
            await asyncio.to_thread(upgrade, url)  # Alembic runs its own event loop: not on this one
        return await _copy_rows(source, target)
    finally:
        for lock in reversed(locks):
            await lock.release()


async def _copy_rows(source: str, target: str) -> CopyResult:
    tables = _tables()
    src_engine, dst_engine = create_engine(source), create_engine(target)
    try:
        async with src_engine.connect() as src, dst_engine.connect() as dst:
            held = {t.name: n for t in tables if (n := await _count(dst, t))}
            if held:
                listed = ", ".join(f"{name} {n}" for name, n in held.items())
                raise CopyError(f"the target {masked_url(target)} is not empty ({listed}); copy into an empty database")
            # Still the transaction the emptiness check began in; leaving `connect()` without the commit below
            # (any error) rolls every table back.
            rows: dict[str, int] = {}
            for table in tables:
                rows[table.name] = await _copy_table(src, dst, table)
            for table in tables:
                if (copied := await _count(dst, table)) != rows[table.name]:
                    raise CopyError(f"{table.name}: {rows[table.name]} rows read but {copied} in the target")
            await dst.commit()
            return CopyResult(rows)
    finally:
        await src_engine.dispose()
        await dst_engine.dispose()


async def _count(connection: AsyncConnection, table: Table) -> int:
    return int((await connection.execute(select(func.count()).select_from(table))).scalar_one())


async def _copy_table(src: AsyncConnection, dst: AsyncConnection, table: Table) -> int:
    copied = 0
    # Typed Core rows both ways: values go through the daemon's own column types.
    result = await src.stream(select(table).order_by(*table.primary_key.columns))
    async for batch in result.mappings().partitions(BATCH_ROWS):
        await dst.execute(insert(table), [dict(row) for row in batch])
        copied += len(batch)
    return copied


def _same(a: str, b: str) -> bool:
    from sqlalchemy import make_url

    x, y = make_url(a), make_url(b)
    return (x.get_backend_name(), x.host, x.port, x.database) == (y.get_backend_name(), y.host, y.port, y.database)
