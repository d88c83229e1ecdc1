"""Injected storage faults: parsing `ZEROCLAW_FAULTS`, and real rollbacks that leave durable state as it was."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import SQLAlchemyError

from app.sessions.store.session_store import SessionStore
from app.storage.faults import ENV_VAR, Faults, StorageFault

# R-STORE-2: runs on SQLite and, in the CI PostgreSQL pass, on PostgreSQL (tests/db_backend.py).
pytestmark = pytest.mark.req("R-STORE-2")


@pytest.fixture
async def store(store: SessionStore) -> SessionStore:
    """The shared store (tests/unit/conftest.py) with one ended turn on session s1."""
    await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
    await store.transcript.append("s1", role="user", content="hi", turn_id="t1", surface="rpc")
    await store.transcript.append("s1", role="assistant", content="Hello", turn_id="t1", surface="rpc")
    await store.transcript.finish_turn("s1", "t1", "end_turn")
    return store


# -- Faults itself -----------------------------------------------------------------------------------------


def test_from_env_parses_points_and_counts() -> None:
    faults = Faults.from_env({ENV_VAR: "save_snapshot:1, kill:2,delete"})
    assert (faults.pending("save_snapshot"), faults.pending("kill"), faults.pending("delete")) == (1, 2, 1)
    assert Faults.from_env({}).pending("kill") == 0
    assert Faults.from_env({ENV_VAR: ""}).pending("kill") == 0


def test_from_env_parses_stalls_apart_from_counts() -> None:
    faults = Faults.from_env({ENV_VAR: "fork:stall, kill:1"})
    assert (faults.pending("fork"), faults.pending("kill")) == (0, 1)
    assert repr(faults) == "Faults({'kill': 1}, stalls=['fork'])"


@pytest.mark.parametrize("spec", ["nosuchpoint:1", "kill:x", "kill:-1", "nosuchpoint:stall"])
def test_from_env_refuses_what_it_cannot_honour(spec: str) -> None:
    with pytest.raises(ValueError, match=ENV_VAR):
        Faults.from_env({ENV_VAR: spec})


def test_check_consumes_one_count_per_call() -> None:
    faults = Faults({"kill": 2})
    for _ in range(2):
        with pytest.raises(StorageFault) as caught:
            faults.check("kill")
        assert caught.value.point == "kill"
    faults.check("kill")  # spent
    faults.arm("delete")
    faults.disarm()
    faults.check("delete")
    with pytest.raises(ValueError):
        faults.arm("typo")


def test_a_fault_is_a_database_error() -> None:
    # Callers handle an injected fault exactly like a real one.
    assert issubclass(StorageFault, SQLAlchemyError)


# -- real rollbacks ------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-2")
async def test_a_failed_snapshot_write_leaves_the_previous_snapshot(store: SessionStore, faults: Faults) -> None:
    first = await store.transcript.save_snapshot("s1", [{"role": "user", "content": "hi"}], 0)
    faults.arm("save_snapshot")
    with pytest.raises(StorageFault):
        await store.transcript.save_snapshot("s1", [], 1)
    context = await store.transcript.context("s1")
    assert (context.snapshot_id, context.boundary) == (first, 0)
    assert context.messages == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}]
    assert await store.transcript.save_snapshot("s1", [], 1) == first + 1  # storage works again: the id was never used


@pytest.mark.req("R-ACP-11")
async def test_a_failed_kill_keeps_the_session_and_its_history(store: SessionStore, faults: Faults) -> None:
    faults.arm("kill")
    with pytest.raises(StorageFault):
        await store.kill("s1")
    record = await store.get("s1")
    assert record is not None and not record.killed and record.message_count == 2
    await store.kill("s1")
    assert (await store.get("s1")).killed  # type: ignore[union-attr]


@pytest.mark.req("R-ACP-11")
async def test_a_failed_delete_keeps_the_row_and_its_checkpoint(store: SessionStore, faults: Faults) -> None:
    await store.transcript.save_snapshot("s1", [], 1)
    faults.arm("delete")
    with pytest.raises(StorageFault):
        await store.delete("s1")
    rows, total = await store.transcript.messages("s1")
    assert total == 2 and [r.content for r in rows] == ["hi", "Hello"]
    assert (await store.transcript.context("s1")).snapshot_id == 1
    assert await store.delete("s1") is True
    assert await store.get("s1") is None


@pytest.mark.req("R-ACP-4")
async def test_a_failed_append_takes_no_index(store: SessionStore, faults: Faults) -> None:
    faults.arm("append")
    with pytest.raises(StorageFault):
        await store.transcript.append("s1", role="user", content="lost", turn_id="t2", surface="rpc")
    assert await store.transcript.append("s1", role="user", content="kept", turn_id="t2", surface="rpc") == 2
    assert await store.transcript.recover_interrupted("s1") is True  # t2 is open: only the committed row counts
    rows, total = await store.transcript.messages("s1")
    assert total == 4 and [r.content for r in rows][2] == "kept"


@pytest.mark.req("R-ACP-5")
async def test_a_failed_recovery_can_run_again(store: SessionStore, faults: Faults) -> None:
    await store.transcript.append("s1", role="assistant", content="par", turn_id="t2", surface="rpc", complete=False)
    faults.arm("recover")
    with pytest.raises(StorageFault):
        await store.transcript.recover_interrupted("s1")
    rows, total = await store.transcript.messages("s1")
    assert total == 3 and rows[-1].complete is False
    assert await store.transcript.recover_interrupted("s1") is True
    assert await store.transcript.recover_interrupted("s1") is False
