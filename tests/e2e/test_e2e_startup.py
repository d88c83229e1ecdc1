"""Start-up cost (issue 15): a daemon on a brand-new or current default SQLite database reaches its readiness line
without Alembic or SQLAlchemy, and the first call that needs storage loads them (app.storage.deferred).

The daemon runs with `PYTHONPROFILEIMPORTTIME=1`: CPython itself writes one stderr line per module it imports, so the
test reads what the real process imported, and when (before or after the readiness line), without any hook of ours.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re

import httpx
import orjson
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from waiting import until_sync
from websockets.asyncio.client import connect

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
    pytest.mark.sqlite_only,  # the fast start is the default SQLite database's
]

IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$")
STORAGE = {"sqlalchemy", "alembic", "aiosqlite"}
NEVER_WITHOUT_GATEWAY = {"starlette", "uvicorn", "h11", "websockets", "rich", "httpx"}
# Every model (config, params, the gateway's answers) is a msgspec Struct: the daemon never imports pydantic, not a
# dependency of it; and it reads config.toml with tomllib until its first config write (issue 15).
NEVER = {"pydantic", "pydantic_core"}
NOT_BEFORE_READY = {"tomlkit", *NEVER}


def modules(daemon: Daemon, *, before_ready: bool) -> set[str]:
    """Modules the daemon imported (before its readiness line, or in all)."""
    found: set[str] = set()
    for line in list(daemon.stderr_lines):
        if before_ready and line.startswith("zeroclaw daemon ready:"):
            break
        match = IMPORT_LINE.match(line)
        if match:
            found.add(match.group(1))
    return found


def imports(daemon: Daemon, *, before_ready: bool) -> set[str]:
    """Top-level packages the daemon imported (before its readiness line, or in all)."""
    return {name.split(".")[0] for name in modules(daemon, before_ready=before_ready)}


def wait_for_import(daemon: Daemon, module: str, timeout: float = 5.0) -> None:
    until_sync(lambda: module in modules(daemon, before_ready=False), timeout, what=f"{module} to be imported")


@pytest.mark.req("R-PATH-7")
async def test_a_new_then_current_sqlite_database_starts_without_sqlalchemy_until_a_call_needs_storage(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    session_id = None
    for start in ("brand new", "current"):
        daemon = daemon_factory.start(root=root, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert "msgspec" in imports(daemon, before_ready=True), daemon.describe()  # the lines are there at all
        early = imports(daemon, before_ready=True) & (STORAGE | NEVER_WITHOUT_GATEWAY | NOT_BEFORE_READY)
        assert early == set(), f"{start}: {early}\n{daemon.describe()}"
        async with await daemon.client() as client:
            await client.call("status")
            assert imports(daemon, before_ready=False) & STORAGE == set(), daemon.describe()
            # `serverVersion` is app.__version__, not a metadata lookup (~10 ms for the first `initialize`).
            assert "importlib.metadata" not in modules(daemon, before_ready=False), daemon.describe()
            if session_id is None:
                session_id = (await client.call("session/new", {}))["sessionId"]
            listed = (await client.call("session/list", {}))["sessions"]
            assert [s["sessionId"] for s in listed] == [session_id], f"{start}: {listed}"
        wait_for_import(daemon, "sqlalchemy")
        assert daemon.stop() == 0
        assert "alembic" not in imports(daemon, before_ready=False), f"{start}\n{daemon.describe()}"
        assert imports(daemon, before_ready=False) & NEVER == set(), f"{start}\n{daemon.describe()}"
    assert (root / "cfg" / "data" / "zeroclaw.db").stat().st_mode & 0o777 == 0o600


@pytest.mark.req("R-PATH-7")
def test_the_gateway_starts_without_sqlalchemy_and_is_ready_only_when_it_listens(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    daemon_factory.start(root=root, env=env).stop()  # creates the database
    daemon = daemon_factory.start(root=root, env=env, no_gateway=False, args=["--gateway-port", "0"])
    assert daemon.ready_line is not None and "gateway=http://" in daemon.ready_line, daemon.describe()
    early = imports(daemon, before_ready=True)
    assert "uvicorn" in early, daemon.describe()
    assert early & STORAGE == set(), daemon.describe()
    # The app (Starlette, the routes) and uvicorn's HTTP and WebSocket protocols come with the first request
    assert early & {"h11", "httptools", "websockets"} == set(), daemon.describe()
    assert "starlette.applications" not in modules(daemon, before_ready=True), daemon.describe()


@pytest.mark.req("R-PATH-7")
async def test_the_first_requests_load_the_app_and_the_protocols_and_are_answered(
    daemon_factory: DaemonFactory,
) -> None:
    root = daemon_factory.tmpdir()
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    daemon = daemon_factory.start(root=root, env=env, no_gateway=False, args=["--gateway-port", "0"])
    match = READY_RE.match(daemon.ready_line or "")
    http_impl = "httptools" if importlib.util.find_spec("httptools") else "h11"  # as uvicorn's http="auto" picks
    assert match is not None and http_impl not in imports(daemon, before_ready=False), daemon.describe()
    async with httpx.AsyncClient(base_url=match["gateway"], trust_env=False) as http:
        health = await http.get("/health")
    assert health.status_code == 200, health.text
    wait_for_import(daemon, "starlette.applications")
    ws_url = "ws" + match["gateway"].removeprefix("http") + "/rpc"
    async with connect(ws_url, proxy=None) as conn:
        await conn.send(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).decode())
        answer = orjson.loads(await asyncio.wait_for(conn.recv(), 10))
    assert answer["id"] == 1 and answer["error"]["code"] == -32010, answer  # a WebSocket peer needs a token
    wait_for_import(daemon, http_impl)
    wait_for_import(daemon, "websockets")
    # The app built its routes and its OpenAPI document (the REST answer models) for the first request.
    assert imports(daemon, before_ready=False) & NEVER == set(), daemon.describe()
