"""SessionStore rollbacks (R-BRANCH-2): rows kept and marked, a marker row, the context rebuilt, numbering continued."""

from __future__ import annotations

import pytest

from app.sessions.errors import BadRollback
from app.sessions.mode import SessionMode
from app.sessions.store.session_store import SessionStore
from app.storage.faults import StorageFault

DURABLE = SessionMode.DURABLE


async def _turn(store: SessionStore, n: int) -> None:
    await store.transcript.append("p", role="user", content=f"q{n}", turn_id=f"t{n}", surface="rpc")
    await store.transcript.append("p", role="assistant", content=f"a{n}", turn_id=f"t{n}", surface="rpc")
    await store.transcript.finish_turn("p", f"t{n}", "end_turn")


@pytest.fixture
async def parent(store: SessionStore) -> SessionStore:
    await store.create("p", owner="alice", agent_alias="default", workspace_dir="/w")
    for n in range(3):
        await _turn(store, n)
    return store


@pytest.mark.req("R-BRANCH-2")
async def test_rollback_hides_the_turns_and_keeps_numbering(parent: SessionStore) -> None:
    done = await parent.rollbacks.rollback("p", 2, mode=DURABLE, surface="rpc")
    assert (done.turns, done.from_index, done.marker_index) == (2, 2, 6)
    context = await parent.transcript.context("p")
    assert context.messages == [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"}]
    rows, total = await parent.transcript.messages("p")
    assert [r.index for r in rows] == [0, 1, 6] and rows[-1].marker == "rolled_back" and total == 7
    everything, _ = await parent.rollbacks.messages("p", mode=DURABLE, limit=100, before=None)
    assert [r.index for r in everything] == list(range(7))
    await _turn(parent, 9)
    rows, _ = await parent.transcript.messages("p")
    assert [r.index for r in rows] == [0, 1, 6, 7, 8]
    assert [m["content"] for m in (await parent.transcript.context("p")).messages] == ["q0", "a0", "q9", "a9"]


@pytest.mark.req("R-BRANCH-2")
async def test_rollback_drops_snapshots_covering_dropped_rows(parent: SessionStore) -> None:
    await parent.transcript.save_snapshot("p", [{"role": "user", "content": "summary"}], boundary=1)
    await parent.transcript.save_snapshot("p", [{"role": "user", "content": "later"}], boundary=5)
    await parent.rollbacks.rollback("p", 1, mode=DURABLE, surface="rpc")
    assert [m["content"] for m in (await parent.transcript.context("p")).messages] == ["summary", "q1", "a1"]


@pytest.mark.req("R-BRANCH-2")
async def test_rollback_of_too_many_turns_is_refused(parent: SessionStore) -> None:
    await parent.rollbacks.rollback("p", 3, mode=DURABLE, surface="rpc")
    with pytest.raises(BadRollback):
        await parent.rollbacks.rollback("p", 1, mode=DURABLE, surface="rpc")
    with pytest.raises(BadRollback):
        await parent.rollbacks.rollback("p", 0, mode=DURABLE, surface="rpc")


@pytest.mark.req("R-BRANCH-6")
async def test_a_failed_rollback_changes_nothing(parent: SessionStore) -> None:
    parent.faults.arm("rollback")
    with pytest.raises(StorageFault):
        await parent.rollbacks.rollback("p", 1, mode=DURABLE, surface="rpc")
    rows, total = await parent.transcript.messages("p")
    assert len(rows) == 6 and total == 6
