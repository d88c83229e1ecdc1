"""Run by test_store_branch_kill.py in a child process: a session of 3 finished turns, then a fork or a rollback
that stops just before its commit (its writes issued), says READY and waits to be SIGKILLed."""

from __future__ import annotations

import asyncio
import sys
import time

from app.sessions.mode import SessionMode
from app.sessions.store.forks import ForkRequest
from app.sessions.store.session_store import SessionStore
from app.storage import Database
from app.storage.faults import Faults
from app.storage.migrate import upgrade


class _Stall(Faults):
    def check(self, point: str) -> None:
        if point in ("fork", "rollback"):
            print("READY", flush=True)
            time.sleep(600)  # why: the parent SIGKILLs this process here, inside the open transaction


async def main(url: str, what: str) -> None:
    await asyncio.to_thread(upgrade, url)
    db = await Database.open(url)
    store = SessionStore(db, faults=_Stall())
    await store.create("p", owner="alice", agent_alias="default", workspace_dir="/w")
    for n in range(3):
        await store.transcript.append("p", role="user", content=f"q{n}", turn_id=f"t{n}", surface="rpc")
        await store.transcript.append("p", role="assistant", content=f"a{n}", turn_id=f"t{n}", surface="rpc")
        await store.transcript.finish_turn("p", f"t{n}", "end_turn")
    if what == "fork":
        await store.forks.fork(ForkRequest(SessionMode.DURABLE, "p", "c", "alice"))
    else:
        await store.rollbacks.rollback("p", 2, mode=SessionMode.DURABLE, surface="rpc")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
