"""Resources run out on a real daemon (issue 16; the kit is `benchmarks/exhaustion.py`): each case a clear error,
nothing lost, the daemon answering afterwards. Every check of a case is in `CaseResult.checks`; a failing test
prints them all.

* file descriptors (the daemon's `RLIMIT_NOFILE` lowered with `prlimit(2)`): peers past the limit are closed, the
  accept loop does not spin (< 10 % of a CPU with peers knocking and one in the backlog), the daemon stays
  alive, every accepted connection answers (`status`; a call needing a new database handle a clear `-32603`
  `storage_unavailable`), service resumes once descriptors free up, SIGTERM exits 0;
* `max_connections`: the next socket and WebSocket peer get one `-32005` `connections` frame (`id: null`,
  `data.limit`), the WebSocket closes 1013, the others keep working, a freed slot is served (R-LIM);
* `upload_budget_bytes` / `max_uploads_per_connection`: `-32005` `upload_budget` / `uploads_per_connection` with
  `data.limit`; the budget is free again after a commit and after a connection closes (R-FILE-3, R-FILE-4);
* the staging disk full (`RLIMIT_FSIZE`, the unprivileged substitute for a full filesystem; the kit's docstring
  says why): a chunk and a commit past it → `-32603`, the upload unchanged and still staged, no partial file,
  and once space is free the same chunk and the commit succeed with the right bytes (R-FILE-2, R-FILE-6).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from e2e_harness import DaemonFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import exhaustion

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-LIM")]


async def run(name: str, factory: DaemonFactory) -> None:
    result = await exhaustion.run_case(name, factory, timeout=25.0)
    report = "\n".join([result.summary(), *result.details()])
    print(report)
    assert result.ok, report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit(2) and /proc")
async def test_file_descriptors_exhausted(daemon_factory: DaemonFactory) -> None:
    await run("fds", daemon_factory)


async def test_connection_cap(daemon_factory: DaemonFactory) -> None:
    await run("connections", daemon_factory)


@pytest.mark.req("R-FILE-3")
@pytest.mark.req("R-FILE-4")
async def test_upload_budget_and_per_connection_cap(daemon_factory: DaemonFactory) -> None:
    await run("uploads", daemon_factory)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit(2)")
@pytest.mark.req("R-FILE-2")
@pytest.mark.req("R-FILE-6")
async def test_staging_disk_full(daemon_factory: DaemonFactory) -> None:
    await run("disk", daemon_factory)
