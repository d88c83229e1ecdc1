"""SIGKILL during a fork and during a rollback (R-BRANCH-6), on a real process and both backends: the child process
stops inside the transaction (writes issued, not committed) and is killed; the parent is intact and the child
absent, the rollback not applied at all."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.sessions.store.session_store import SessionStore
from app.storage import Database

CHILD = Path(__file__).with_name("branch_kill_child.py")
ROOT = Path(__file__).resolve().parents[3]


async def _kill_at_commit(url: str, what: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), url, what, stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.strip() == b"READY"
    proc.send_signal(signal.SIGKILL)
    await proc.wait()


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.parametrize("what", ["fork", "rollback"])
async def test_sigkill_before_the_commit_leaves_the_parent_whole(database_url: str, what: str) -> None:
    await _kill_at_commit(database_url, what)
    db = await Database.open(database_url)
    try:
        store = SessionStore(db)
        assert await store.get("c") is None
        rows, total = await store.transcript.messages("p")
        assert total == 6 and [r.content for r in rows] == ["q0", "a0", "q1", "a1", "q2", "a2"]
        assert len((await store.transcript.context("p")).messages) == 6
    finally:
        await db.close()
