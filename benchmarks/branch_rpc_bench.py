"""`session/fork` and `session/rollback` as a client sees them (issue 42, R-BRANCH-6): a real daemon, its socket.

A session of 10,000 rows (`tests/e2e/big_session.py`: one real turn, the rest stored in bulk while no daemon runs);
then `--repeat` forks of the whole session and as many rollbacks of one turn, each timed from the request written to
the answer read; medians. The database is a fresh SQLite file, or a fresh database on the PostgreSQL server of
`ZEROCLAW_TEST_DATABASE_URL` (tests/db_backend.py).

    python benchmarks/branch_rpc_bench.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
for _dir in (str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "e2e")):  # the harness and tests/db_backend.py
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from big_session import ROWS, big_session  # noqa: E402
from e2e_harness import DaemonFactory  # noqa: E402
from session_client import Peer  # noqa: E402


async def run(repeat: int) -> dict[str, float]:
    factory = DaemonFactory()
    try:
        stopped, sid = await big_session(factory)
        daemon = factory.start(config_dir=stopped.config_dir, root=stopped.root)
        times: dict[str, list[float]] = {"fork_ms": [], "rollback_ms": []}
        async with await Peer.open(daemon) as peer:
            for key, method, params in (
                ("fork_ms", "session/fork", {"sessionId": sid}),
                ("rollback_ms", "session/rollback", {"sessionId": sid, "turns": 1}),
            ):
                for _ in range(repeat):
                    start = time.perf_counter()
                    await peer.call(method, params)
                    times[key].append((time.perf_counter() - start) * 1000)
        return {key: statistics.median(values) for key, values in times.items()}
    finally:
        factory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    result = asyncio.run(run(args.repeat))
    print(f"session/fork and session/rollback over the socket, {ROWS} rows, median of {args.repeat}:")
    for key, value in result.items():
        print(f"  {key:12} {value:8.2f}")


if __name__ == "__main__":
    main()
