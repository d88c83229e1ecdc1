"""Forks and rollbacks of a big session (issue 42, R-BRANCH-6): medians on SQLite, and PostgreSQL with `--url`.

A session of `--rows` transcript rows (user/assistant pairs, every turn finished) is stored in bulk; then
`SessionStore.forks.fork` of the whole session and `rollbacks.rollback` of one turn are timed `--repeat` times each
(each fork makes a new child; each rollback drops the newest retained turn). Also what a turn costs in storage on
a fork vs on its parent, alternated (R-BRANCH-6: within 1.2x): `context_*` is `transcript.context` uncached (what
the first turn after a restart reads), `turn_*` a whole turn's storage work: that read, the prompt and the answer
appended, the turn finished.

    python benchmarks/branch_bench.py [--rows 10000] [--repeat 30] [--url postgresql+psycopg://…]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.sessions.mode import SessionMode
from app.sessions.store.forks import ForkRequest
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.engine import default_url
from app.storage.migrate import upgrade
from app.storage.models import AcpSession, AcpTranscriptRow, AcpTurn
from app.storage.types import utcnow


def _fill(s: Any, rows: int) -> None:
    now = utcnow()
    transcript = [
        {"session_id": "big", "idx": i, "role": "user" if i % 2 == 0 else "assistant",
         "content": f"message {i} " + "words " * 20, "turn_id": f"t{i // 2}", "interaction_surface": "rpc",
         "complete": True, "created_at": now}
        for i in range(rows)
    ]  # fmt: skip
    s.execute(sa.insert(AcpTranscriptRow), transcript)
    turns = [
        {"session_id": "big", "turn_id": f"t{t}", "interaction_surface": "rpc", "first_index": 2 * t,
         "started_at": now, "finished_at": now, "stop_reason": "end_turn"}
        for t in range(rows // 2)
    ]  # fmt: skip
    s.execute(sa.insert(AcpTurn), turns)
    s.execute(sa.update(AcpSession).where(AcpSession.session_id == "big").values(next_index=rows))


async def _timed(repeat: int, make: Any) -> list[float]:
    times = []
    for n in range(repeat):
        start = time.perf_counter()
        await make(n)
        times.append((time.perf_counter() - start) * 1000)
    return times


async def run(url: str, rows: int, repeat: int) -> dict[str, float]:
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    try:
        store = SessionStore(db)
        await store.create("big", owner="bench", agent_alias="default", workspace_dir="/w")
        await db.write(_fill, rows)
        forks = await _timed(repeat, lambda n: store.forks.fork(ForkRequest(SessionMode.DURABLE, "big", f"c{n}", "b")))
        contexts: dict[str, list[float]] = {"parent": [], "child": []}
        turns: dict[str, list[float]] = {"parent": [], "child": []}
        for n in range(repeat):
            for who, sid in (("parent", "big"), ("child", "c0")):
                store._units.contexts.drop(sid)  # uncached: what a turn after a restart reads
                start = time.perf_counter()
                await store.transcript.context(sid)
                contexts[who].append((time.perf_counter() - start) * 1000)
                store._units.contexts.drop(sid)
                start = time.perf_counter()
                await _turn(store, sid, f"bench{n}")
                turns[who].append((time.perf_counter() - start) * 1000)
        rollbacks = await _timed(
            repeat, lambda n: store.rollbacks.rollback("big", 1, mode=SessionMode.DURABLE, surface="rpc")
        )
    finally:
        await db.close()
    return {
        "fork_ms": statistics.median(forks),
        "rollback_ms": statistics.median(rollbacks),
        "context_parent_ms": statistics.median(contexts["parent"]),
        "context_child_ms": statistics.median(contexts["child"]),
        "turn_parent_ms": statistics.median(turns["parent"]),
        "turn_child_ms": statistics.median(turns["child"]),
    }


async def _turn(store: SessionStore, sid: str, turn_id: str) -> None:
    """A turn's storage work: its context read, the prompt and the answer appended, the turn finished."""
    await store.transcript.context(sid)
    t = store.transcript
    await t.append(sid, role="user", content="one more " + "words " * 20, turn_id=turn_id, surface="rpc")
    await t.append(sid, role="assistant", content="the answer " + "words " * 20, turn_id=turn_id, surface="rpc")
    await t.finish_turn(sid, turn_id, "end_turn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--url", help="a database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or default_url(Path(tmp))
        result = asyncio.run(run(url, args.rows, args.repeat))
    print(f"{url.split(':')[0]}, {args.rows} rows, median of {args.repeat}:")
    for key, value in result.items():
        print(f"  {key:20} {value:8.2f}")
    print(f"  child/parent context {result['context_child_ms'] / result['context_parent_ms']:8.2f}x")
    print(f"  child/parent turn    {result['turn_child_ms'] / result['turn_parent_ms']:8.2f}x")


if __name__ == "__main__":
    main()
