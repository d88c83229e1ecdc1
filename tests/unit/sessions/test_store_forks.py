"""SessionStore forks (R-BRANCH-1): rows before the point, finished turns, the right snapshot; parent untouched."""

from __future__ import annotations

import contextlib

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from app.sessions.errors import BadForkPoint
from app.sessions.mode import SessionMode
from app.sessions.store.forks import ForkRequest
from app.sessions.store.session_store import SessionStore
from app.storage.faults import StorageFault
from app.storage.models import AcpTranscriptRow
from app.storage.types import utcnow


async def _turn(
    store: SessionStore, sid: str, n: int, *, finish: bool = True, mode: SessionMode = SessionMode.DURABLE
) -> None:
    t = store.transcript
    await t.append(sid, role="user", content=f"q{n}", turn_id=f"t{n}", surface="rpc", mode=mode)
    await t.append(sid, role="assistant", content=f"a{n}", turn_id=f"t{n}", surface="rpc", mode=mode)
    if finish:
        await t.finish_turn(sid, f"t{n}", "end_turn", mode=mode)


@pytest.fixture
async def parent(store: SessionStore) -> SessionStore:
    await store.create("p", owner="alice", agent_alias="default", workspace_dir="/w")
    for n in range(3):
        await _turn(store, "p", n)
    return store


@pytest.mark.req("R-BRANCH-1")
async def test_fork_at_a_prompt_copies_the_rows_before_it(parent: SessionStore) -> None:
    forked = await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "bob", at_index=2))
    assert forked.forked_at == 2 and forked.record.owner == "bob" and forked.record.message_count == 2
    context = await parent.transcript.context("c")
    assert context.messages == [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"}]
    assert (await parent.transcript.messages("p"))[1] == 6


@pytest.mark.req("R-BRANCH-1")
async def test_fork_at_a_non_prompt_row_is_refused(parent: SessionStore) -> None:
    with pytest.raises(BadForkPoint, match="atIndex 3"):
        await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice", at_index=3))
    assert await parent.get("c") is None


@pytest.mark.req("R-BRANCH-1")
async def test_fork_leaves_a_running_turn_behind(parent: SessionStore) -> None:
    await _turn(parent, "p", 3, finish=False)
    forked = await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice"))
    assert forked.forked_at == 6
    await _turn(parent, "c", 9)
    rows, total = await parent.transcript.messages("c")
    assert total == 8 and [r.content for r in rows][-2:] == ["q9", "a9"]


@pytest.mark.req("R-BRANCH-1")
async def test_fork_of_a_trimmed_session_starts_from_the_snapshot_before_the_point(parent: SessionStore) -> None:
    trimmed = [{"role": "user", "content": "summary of q0"}]
    await parent.transcript.save_snapshot("p", trimmed, boundary=1)
    await parent.transcript.save_snapshot("p", [{"role": "user", "content": "later"}], boundary=5)
    await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice", at_index=4))
    context = await parent.transcript.context("c")
    assert context.messages == [*trimmed, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]


@pytest.mark.req("R-BRANCH-1")
async def test_chat_sessions_fork_too(store: SessionStore) -> None:
    chat = SessionMode.CHAT
    await store.create("p", owner="alice", agent_alias="default", workspace_dir="/w", mode=chat)
    await _turn(store, "p", 0, mode=chat)
    await _turn(store, "p", 1, finish=False, mode=chat)
    forked = await store.forks.fork(ForkRequest(chat, "p", "c", "alice"))
    assert forked.forked_at == 4 and forked.record.mode == chat


@pytest.mark.req("R-BRANCH-6")
async def test_a_failed_fork_leaves_no_child(parent: SessionStore) -> None:
    parent.faults.arm("fork")
    with pytest.raises(StorageFault):
        await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice"))
    assert await parent.get("c") is None
    assert (await parent.transcript.messages("p"))[1] == 6


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.parametrize("fails", [False, True])
async def test_the_checks_a_fork_skips_hold_again_for_every_later_write(parent: SessionStore, fails: bool) -> None:
    """On SQLite the copies skip the CHECK constraints their source rows already met; the very next write on the
    writer's connection (a fork that failed after its copies included) is checked again."""
    if fails:
        parent.faults.arm("fork")
    with contextlib.suppress(StorageFault):
        await parent.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice"))
    bad_role = sa.insert(AcpTranscriptRow).values(
        session_id="p", idx=99, role="wizard", content="x", turn_id="t9", interaction_surface="rpc", complete=True,
        created_at=utcnow(),
    )  # fmt: skip
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        await parent._units.db.write(lambda s: s.execute(bad_role))
