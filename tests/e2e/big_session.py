"""A stored session of 10,000 rows made fast for e2e tests and benchmarks of branching (R-BRANCH-6): one real turn
through a daemon, then rows 2.. written in bulk while no daemon runs (user/assistant pairs, every turn finished, as
`benchmarks/branch_bench.py` fills its session)."""

from __future__ import annotations

import sqlalchemy as sa
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, new_sid
from sqlalchemy.orm import Session

from app.storage import Database
from app.storage.models import AcpSession, AcpTranscriptRow, AcpTurn
from app.storage.types import utcnow

__all__ = ["ROWS", "big_session"]

ROWS = 10_000


def _grow(s: Session, sid: str, rows: int) -> None:
    """Rows 2.. of the session (rows 0, 1 are its real first turn) and their finished turns."""
    now = utcnow()
    s.execute(
        sa.insert(AcpTranscriptRow),
        [
            {"session_id": sid, "idx": i, "role": "user" if i % 2 == 0 else "assistant",
             "content": f"message {i} " + "words " * 20, "turn_id": f"bulk{i // 2}", "interaction_surface": "rpc",
             "complete": True, "created_at": now}
            for i in range(2, rows)
        ],
    )  # fmt: skip
    s.execute(
        sa.insert(AcpTurn),
        [
            {"session_id": sid, "turn_id": f"bulk{t}", "interaction_surface": "rpc", "first_index": 2 * t,
             "started_at": now, "finished_at": now, "stop_reason": "end_turn"}
            for t in range(1, rows // 2)
        ],
    )  # fmt: skip
    s.execute(sa.update(AcpSession).where(AcpSession.session_id == sid).values(next_index=rows))


async def big_session(factory: DaemonFactory, rows: int = ROWS) -> tuple[Daemon, str]:
    """A stopped daemon and the id of its session of `rows` rows, owned by the `Peer` of that daemon."""
    daemon = factory.start()
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        await peer.prompt(sid, "first")
    assert daemon.stop() == 0
    db = await Database.open(daemon.database_url)
    try:
        await db.write(_grow, sid, rows)
    finally:
        await db.close()
    return daemon, sid
