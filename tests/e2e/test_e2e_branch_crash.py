"""SIGKILL of a real daemon during a fork and during a rollback of a 10,000-row session (R-BRANCH-6, issue 42).

The session is made by a real turn, then grown to 10,000 rows in bulk while no daemon runs (as
`benchmarks/branch_bench.py` does: user/assistant pairs, every turn finished). Two ways to kill "during":

* inside the transaction, every time: `ZEROCLAW_FAULTS=fork:stall` (or `rollback:stall`) stops the write after its
  statements were issued, before its commit, and logs `stalled at 'fork'`; the test waits for that line and kills;
* at chosen moments: the request is written, then the daemon is killed 0, 5, 15, 30, 60 or 120 ms later (before,
  during or after the write, whichever it was).

After each kill a daemon restarts on the same database, and the client checks what it sees: the parent's rows are
exactly what they were; a child is absent from `session/list`, or whole (all 10,000 rows, its `/context` the same as
a fork made after the restart gives); a rollback is applied completely (rows hidden, the `rolled_back` marker row,
a later turn's `/context` without the turn) or not at all.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
from big_session import ROWS, big_session
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint, SIGKILL")]

DELAYS_MS = (0, 5, 15, 30, 60, 120)


def restart(daemon_factory: DaemonFactory, daemon: Daemon, faults: str | None = None) -> Daemon:
    assert not daemon.is_running()
    env = None if faults is None else {"ZEROCLAW_FAULTS": faults}
    return daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root, env=env)


def kill(daemon: Daemon) -> None:
    daemon.send_signal(signal.SIGKILL)
    assert daemon.wait_exit() == -signal.SIGKILL


async def shown(peer: Peer, sid: str, *, rolled_back: bool = False) -> list[tuple[int, str, str]]:
    """(index, role, content) of every row `session/messages` shows (with the rolled-back ones: the newest 10,000)."""
    params = {"sessionId": sid, "limit": 10_000, "includeRolledBack": rolled_back}
    rows = (await peer.call("session/messages", params))["messages"]
    return [(r["index"], r["role"], r["content"]) for r in rows]


async def children(peer: Peer, sid: str) -> list[dict[str, Any]]:
    listed = await peer.call("session/list", {})
    return [s for s in listed["sessions"] if s.get("parentId") == sid]


async def context_of(peer: Peer, sid: str) -> list[str]:
    turn = await peer.prompt(sid, "/context")
    assert turn.result["stopReason"] == "end_turn", turn.result
    return turn.result["content"].splitlines()  # type: ignore[no-any-return]


def last_prompt(lines: list[str]) -> str:
    """The newest bulk prompt the model was given (`user: message <n> words …`)."""
    return next(line for line in reversed(lines) if line.startswith("user: message ")).split()[2]


async def check_after_fork_kill(peer: Peer, sid: str, parent_rows: list[tuple[int, str, str]]) -> str:
    """Parent intact; the child absent or whole. 'absent' or 'whole'."""
    assert await shown(peer, sid) == parent_rows, "the parent changed"
    found = await children(peer, sid)
    assert len(found) <= 1, found
    if not found:
        return "absent"
    child = found[0]["sessionId"]
    assert found[0]["forkedAt"] == ROWS, found
    assert await shown(peer, child) == parent_rows, "a partial child"
    # what its model is given is what a complete fork gives
    reference = (await peer.call("session/fork", {"sessionId": sid}))["sessionId"]
    assert await context_of(peer, child) == await context_of(peer, reference)
    return "whole"


# ------------------------------------------------------------------------------------ inside the transaction


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.req("R-BRANCH-1")
async def test_sigkill_inside_a_fork_leaves_the_parent_whole_and_no_child(daemon_factory: DaemonFactory) -> None:
    daemon, sid = await big_session(daemon_factory)
    daemon = restart(daemon_factory, daemon, faults="fork:stall")
    async with await Peer.open(daemon) as peer:
        parent_rows = await shown(peer, sid)
        assert len(parent_rows) == ROWS
        mark = daemon.stderr_mark()
        await peer.start("session/fork", {"sessionId": sid})
        await daemon.wait_stderr("storage fault: stalled at 'fork'", after=mark)
        kill(daemon)
    daemon = restart(daemon_factory, daemon)
    async with await Peer.open(daemon) as peer:
        assert await check_after_fork_kill(peer, sid, parent_rows) == "absent"
        # the parent forks as ever, and the fork's model has the parent's context
        child = (await peer.call("session/fork", {"sessionId": sid}))["sessionId"]
        assert await shown(peer, child) == parent_rows
        assert await context_of(peer, child) == await context_of(peer, sid)


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.req("R-BRANCH-2")
async def test_sigkill_inside_a_rollback_applies_none_of_it(daemon_factory: DaemonFactory) -> None:
    daemon, sid = await big_session(daemon_factory)
    daemon = restart(daemon_factory, daemon, faults="rollback:stall")
    async with await Peer.open(daemon) as peer:
        rows = await shown(peer, sid)
        mark = daemon.stderr_mark()
        await peer.start("session/rollback", {"sessionId": sid, "turns": 1})
        await daemon.wait_stderr("storage fault: stalled at 'rollback'", after=mark)
        kill(daemon)
    daemon = restart(daemon_factory, daemon)
    async with await Peer.open(daemon) as peer:
        assert await shown(peer, sid) == rows
        assert await shown(peer, sid, rolled_back=True) == rows  # nothing marked, no marker row
        assert last_prompt(await context_of(peer, sid)) == str(ROWS - 2)
        # and it can be rolled back after all (the /context turn first)
        done = await peer.call("session/rollback", {"sessionId": sid, "turns": 2})
        assert (done["fromIndex"], done["markerIndex"]) == (ROWS - 2, ROWS + 2), done
        assert last_prompt(await context_of(peer, sid)) == str(ROWS - 4)


# ------------------------------------------------------------------------------------------- at chosen moments


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.req("R-BRANCH-1")
async def test_sigkill_at_moments_around_a_fork_leaves_the_child_whole_or_absent(daemon_factory: DaemonFactory) -> None:
    daemon, sid = await big_session(daemon_factory)
    outcomes = []
    parent_rows: list[tuple[int, str, str]] | None = None
    for delay in DELAYS_MS:
        daemon = restart(daemon_factory, daemon)
        async with await Peer.open(daemon) as peer:
            if parent_rows is None:
                parent_rows = await shown(peer, sid)
            for child in await children(peer, sid):  # a whole child of the round before: out of the way
                await peer.call("session/delete", {"sessionId": child["sessionId"]})
            await peer.start("session/fork", {"sessionId": sid})
            # time is the behaviour: the kill lands this long after the request was written
            await asyncio.sleep(delay / 1000)
            kill(daemon)
        daemon = restart(daemon_factory, daemon)
        async with await Peer.open(daemon) as peer:
            outcomes.append((delay, await check_after_fork_kill(peer, sid, parent_rows)))
        assert daemon.stop() == 0
    assert len(outcomes) == len(DELAYS_MS), outcomes


@pytest.mark.req("R-BRANCH-6")
@pytest.mark.req("R-BRANCH-2")
async def test_sigkill_at_moments_around_a_rollback_applies_all_or_nothing(daemon_factory: DaemonFactory) -> None:
    daemon, sid = await big_session(daemon_factory)
    retained = ROWS  # rows 0..retained-1 are retained; each applied rollback drops the newest turn
    next_index = ROWS
    for delay in DELAYS_MS:
        daemon = restart(daemon_factory, daemon)
        async with await Peer.open(daemon) as peer:
            before = await shown(peer, sid)
            await peer.start("session/rollback", {"sessionId": sid, "turns": 1})
            # time is the behaviour: the kill lands this long after the request was written
            await asyncio.sleep(delay / 1000)
            kill(daemon)
        daemon = restart(daemon_factory, daemon)
        async with await Peer.open(daemon) as peer:
            after = await shown(peer, sid)
            if after != before:  # applied: the newest turn's rows and every row after them hidden, a marker
                retained -= 2
                marker = (next_index, "marker", f'{{"turns":1,"from_index":{retained}}}')
                assert after == [*(row for row in before if row[0] < retained), marker], after[-3:]
                next_index += 1
            rows_with_dropped = await peer.call(
                "session/messages", {"sessionId": sid, "limit": 1, "includeRolledBack": True}
            )
            assert rows_with_dropped["total"] == next_index and rows_with_dropped["messages"][0]["index"] == (
                next_index - 1
            )
        assert daemon.stop() == 0
    daemon = restart(daemon_factory, daemon)
    async with await Peer.open(daemon) as peer:
        assert last_prompt(await context_of(peer, sid)) == str(retained - 2)
