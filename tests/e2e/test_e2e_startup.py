"""Start-up cost (issue 15): a daemon on a brand-new or current default SQLite database reaches its readiness line
without Alembic or SQLAlchemy, and the first call that needs storage loads them (app.storage.deferred).

The daemon runs with `PYTHONPROFILEIMPORTTIME=1`: CPython itself writes one stderr line per module it imports, so the
test reads what the real process imported, and when (before or after the readiness line), without any hook of ours.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from e2e_harness import Daemon, DaemonFactory

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.sqlite_only,  # the fast start is the default SQLite database's
]

IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$")
STORAGE = {"sqlalchemy", "alembic", "aiosqlite"}
NEVER_WITHOUT_GATEWAY = {"starlette", "uvicorn", "h11", "websockets", "rich", "httpx"}


def imports(daemon: Daemon, *, before_ready: bool) -> set[str]:
    """Top-level packages the daemon imported (before its readiness line, or in all)."""
    found: set[str] = set()
    for line in list(daemon.stderr_lines):
        if before_ready and line.startswith("zeroclaw daemon ready:"):
            break
        match = IMPORT_LINE.match(line)
        if match:
            found.add(match.group(1).split(".")[0])
    return found


def wait_for_import(daemon: Daemon, package: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while package not in imports(daemon, before_ready=False):
        assert time.monotonic() < deadline, f"{package} never imported\n{daemon.describe()}"
        time.sleep(0.02)


@pytest.mark.req("R-PATH-7")
async def test_a_new_then_current_sqlite_database_starts_without_sqlalchemy_until_a_call_needs_storage(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    session_id = None
    for start in ("brand new", "current"):
        daemon = daemon_factory.start(root=root, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert "pydantic" in imports(daemon, before_ready=True), daemon.describe()  # the lines are there at all
        early = imports(daemon, before_ready=True) & (STORAGE | NEVER_WITHOUT_GATEWAY)
        assert early == set(), f"{start}: {early}\n{daemon.describe()}"
        async with await daemon.client() as client:
            await client.call("status")
            assert imports(daemon, before_ready=False) & STORAGE == set(), daemon.describe()
            if session_id is None:
                session_id = (await client.call("session/new", {}))["sessionId"]
            listed = (await client.call("session/list", {}))["sessions"]
            assert [s["sessionId"] for s in listed] == [session_id], f"{start}: {listed}"
        wait_for_import(daemon, "sqlalchemy")
        assert daemon.stop() == 0
        assert "alembic" not in imports(daemon, before_ready=False), f"{start}\n{daemon.describe()}"
    assert (root / "cfg" / "data" / "zeroclaw.db").stat().st_mode & 0o777 == 0o600


@pytest.mark.req("R-PATH-7")
def test_the_gateway_starts_without_sqlalchemy_and_is_ready_only_when_it_listens(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    daemon_factory.start(root=root, env=env).stop()  # creates the database
    daemon = daemon_factory.start(root=root, env=env, no_gateway=False, args=["--gateway-port", "0"])
    assert daemon.ready_line is not None and "gateway=http://" in daemon.ready_line, daemon.describe()
    early = imports(daemon, before_ready=True)
    assert {"starlette", "uvicorn"} <= early, daemon.describe()
    assert early & STORAGE == set(), daemon.describe()
