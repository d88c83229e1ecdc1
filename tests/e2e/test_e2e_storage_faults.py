"""Storage faults over a real socket (R-STORE-3): refusing to start, and a full or read-only database mid-run.

Start-up: an unreachable PostgreSQL server, a SQLite path that is a directory, a file that is not a database, a
database another process holds locked: each is one line on stderr naming the URL with its password masked, and a
non-zero exit, with no traceback.

Mid-run faults are real SQLite errors on the daemon's own connections, switched on and off through the file named by
`ZEROCLAW_STORAGE_FAULT_FILE` (app/storage/driver_faults.py): `full` lowers `PRAGMA max_page_count` to the pages in
use (SQLITE_FULL, "database or disk is full"), `read_only` sets `PRAGMA query_only` (SQLITE_READONLY; a chmod would
prove nothing, as root ignores file modes). SQLite only: a PostgreSQL run skips them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import db_backend
import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from session_client import TOKEN_USER_CONFIG, Peer, new_sid

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

sqlite_only = pytest.mark.sqlite_only  # the fault knob drives SQLite pragmas

FAULT_ENV = "ZEROCLAW_STORAGE_FAULT_FILE"
# A prompt whose transcript row needs pages of its own (overflow pages): a full database cannot take it.
BIG_PROMPT = "spill " * 8000


# ------------------------------------------------------------------------------------------------ start-up


def refused_line(daemon: Daemon, timeout: float) -> str:
    """The daemon exits non-zero within `timeout` s, with exactly one line on stderr; that line."""
    started = time.monotonic()
    rc = daemon.wait_exit(timeout)
    assert rc != 0, daemon.describe()
    assert time.monotonic() - started < timeout
    lines = [line for line in daemon.stderr_lines if line.strip()]
    assert len(lines) == 1, daemon.describe()
    assert "Traceback" not in daemon.stderr and 'File "' not in daemon.stderr, daemon.describe()
    return lines[0]


@pytest.mark.req("R-STORE-3")
def test_an_unreachable_postgresql_server_is_one_line_with_the_password_masked(daemon_factory: DaemonFactory) -> None:
    url = "postgresql+asyncpg://zc_user:s3cret-pw@127.0.0.1:1/zeroclaw"  # port 1: nothing listens there
    daemon = daemon_factory.spawn(f'[storage]\nurl = "{url}"\n')
    line = refused_line(daemon, timeout=10)
    assert line.startswith("zeroclaw daemon: cannot open the database "), line
    assert "postgresql+asyncpg://zc_user:***@127.0.0.1:1/zeroclaw" in line, line
    assert "s3cret-pw" not in daemon.stderr


def _directory(root: Path) -> Path:
    path = root / "a-directory.db"
    path.mkdir()
    return path


def _not_a_database(root: Path) -> Path:
    path = root / "garbage.db"
    path.write_bytes(b"this is not an SQLite database, only text long enough to be read as a header\n" * 20)
    return path


@pytest.mark.req("R-STORE-3")
@pytest.mark.parametrize(
    ("make", "phrase"),
    [(_directory, "the path is a directory"), (_not_a_database, "not a usable database")],
    ids=["directory", "not-a-database"],
)
def test_a_sqlite_path_that_cannot_be_opened_is_one_line(daemon_factory: DaemonFactory, make: Any, phrase: str) -> None:
    root = daemon_factory.tmpdir()
    path = make(root)
    url = f"sqlite+aiosqlite:///{path}"
    daemon = daemon_factory.spawn(f'[storage]\nurl = "{url}"\n', root=root)
    line = refused_line(daemon, timeout=10)
    assert line == f"zeroclaw daemon: cannot open the database {url}: {phrase}" or (
        line.startswith(f"zeroclaw daemon: cannot open the database {url}: ") and phrase in line
    ), line


@sqlite_only  # with a test server configured, the harness points every daemon at it
@pytest.mark.req("R-STORE-3")
def test_the_default_database_path_that_cannot_be_opened_is_one_line(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    data = root / "cfg" / "data"
    data.mkdir(mode=0o700, parents=True)
    (data / "zeroclaw.db").mkdir()
    daemon = daemon_factory.spawn(root=root)
    line = refused_line(daemon, timeout=10)
    assert line == f"zeroclaw daemon: cannot open the database {db_backend.default_url(data)}: the path is a directory"


@pytest.mark.req("R-STORE-3")
def test_a_sqlite_database_locked_by_another_process_is_one_line(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    path = root / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        # An exclusive lock in rollback-journal mode: nobody else may read or write until it is released.
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("CREATE TABLE held (x)")
        url = f"sqlite+aiosqlite:///{path}"
        daemon = daemon_factory.spawn(f'[storage]\nurl = "{url}"\n', root=root)
        # The busy timeout (5 s) lets a short `zeroclaw db upgrade` finish first; a lock held longer refuses.
        line = refused_line(daemon, timeout=25)
    finally:
        holder.close()
    assert line == f"zeroclaw daemon: cannot open the database {url}: the database is locked by another process", line


# ------------------------------------------------------------------------------------------------ mid-run


def faulty_daemon(factory: DaemonFactory, config: str | None = None, **kw: Any) -> tuple[Daemon, Path]:
    root = factory.tmpdir()
    knob = root / "fault"
    daemon = factory.start(config, root=root, env={FAULT_ENV: str(knob)}, **kw)
    return daemon, knob


def storage_error(code: int, data: dict[str, Any], reason: str) -> None:
    assert code == -32603, (code, data)
    assert data.get("kind") == "storage_unavailable" and data.get("reason") == reason, data
    assert isinstance(data.get("error_id"), str) and data["error_id"], data


async def rows(peer: Peer, sid: str) -> list[tuple[str, str]]:
    page = await peer.call("session/messages", {"sessionId": sid})
    return [(r["role"], r["content"]) for r in page["messages"]]


async def listed(peer: Peer, sid: str) -> dict[str, Any]:
    (entry,) = [s for s in (await peer.call("session/list"))["sessions"] if s["sessionId"] == sid]
    return entry  # type: ignore[no-any-return]


async def reads_still_answer(peer: Peer, sid: str, expected: list[tuple[str, str]]) -> None:
    assert await rows(peer, sid) == expected
    entry = await listed(peer, sid)
    assert entry["live"] is True and entry["messageCount"] == len(expected), entry
    assert isinstance(await peer.call("status"), dict)
    assert await peer.call("config/get", {"prop": "limits.max_sessions"}) is not None


@sqlite_only
@pytest.mark.req("R-STORE-3")
async def test_a_full_disk_during_a_turn_answers_storage_unavailable_and_the_session_goes_on(
    daemon_factory: DaemonFactory,
) -> None:
    daemon, knob = faulty_daemon(daemon_factory)
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        assert (await peer.prompt(sid, "before")).result["stopReason"] == "end_turn"
        committed = [("user", "before"), ("assistant", "You said: «before»")]

        knob.write_text("full")
        mark, fut = await peer.start_prompt(sid, BIG_PROMPT)
        response = await asyncio.wait_for(fut, 10)
        assert "error" in response, response
        storage_error(response["error"]["code"], response["error"].get("data") or {}, "disk_full")
        assert "disk is full" not in str(response)  # a fixed sentence, never the driver's text
        (complete,) = [u for u in peer.updates[mark:] if u.get("type") == "turn_complete"]
        assert complete["stopReason"] == "failed", complete

        await reads_still_answer(peer, sid, committed)  # nothing committed is lost; the session is still live
        code, data = await peer.error("session/prompt", {"sessionId": sid, "prompt": BIG_PROMPT})
        storage_error(code, data, "disk_full")  # not busy: the failed turn is over

        knob.write_text("")  # space is back: the same live session takes the next prompt
        assert (await peer.prompt(sid, "after")).result["stopReason"] == "end_turn"
        after = [*committed, ("user", "after"), ("assistant", "You said: «after»")]
        assert await rows(peer, sid) == after
        assert (await listed(peer, sid))["live"] is True

    # committed means durable: a restart on the same database reads every row back
    config_dir = daemon.config_dir
    daemon.stop()
    again = daemon_factory.start(config_dir=config_dir, root=daemon.root)
    async with await Peer.open(again) as peer:
        assert await rows(peer, sid) == after


@sqlite_only
@pytest.mark.req("R-STORE-3")
async def test_a_read_only_database_refuses_writes_and_answers_reads_over_the_socket_and_rest(
    daemon_factory: DaemonFactory,
) -> None:
    daemon, knob = faulty_daemon(daemon_factory, TOKEN_USER_CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert daemon.ready_line is not None
    m = READY_RE.match(daemon.ready_line)
    assert m is not None and m["gateway"] != "off", daemon.ready_line
    async with await Peer.open(daemon) as peer, httpx.AsyncClient(base_url=m["gateway"], trust_env=False) as http:
        alice = (await peer.call("pairing/create", {"user": "alice"}))["token"]
        later = (await peer.call("pairing/create", {"user": "alice"}))["token"]  # never used before the fault
        auth = {"Authorization": f"Bearer {alice}"}
        sid = await new_sid(peer)
        assert (await peer.prompt(sid, "kept")).result["stopReason"] == "end_turn"
        committed = [("user", "kept"), ("assistant", "You said: «kept»")]
        async with await Peer.open(daemon, token=alice) as alice_peer:
            alice_sid = await new_sid(alice_peer)
        assert (await http.get("/api/sessions", headers=auth)).status_code == 200

        knob.write_text("read_only")
        # every write is refused with the same answer...
        for method, params in [
            ("session/new", {}),
            ("session/prompt", {"sessionId": sid, "prompt": "refused"}),
            ("pairing/create", {"user": "alice"}),
        ]:
            code, data = await peer.error(method, params)
            storage_error(code, data, "read_only")
        # ...and everything that does not write is answered
        await reads_still_answer(peer, sid, committed)
        assert [t["user"] for t in (await peer.call("pairing/list"))["tokens"]] == ["alice", "alice"]

        # REST: the same kind, as 503; a token already in use still reads
        response = await http.post(f"/api/sessions/{alice_sid}/prompt", json={"prompt": "refused"}, headers=auth)
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["kind"] == "storage_unavailable" and error["reason"] == "read_only", error
        assert error["error_id"] and "readonly" not in response.text, error
        response = await http.get("/api/sessions", headers=auth)
        assert [s["sessionId"] for s in response.json()["sessions"]] == [alice_sid], response.text
        response = await http.get(f"/api/sessions/{alice_sid}/messages", headers=auth)
        assert response.status_code == 200 and response.json()["messages"] == [], response.text
        response = await http.get("/api/sessions", headers={"Authorization": f"Bearer {later}"})
        assert response.status_code == 503, response.text  # a token never checked cannot be checked now
        assert response.json()["error"]["kind"] == "storage_unavailable" and response.json()["error"]["error_id"]

        knob.write_text("")
        assert (await peer.prompt(sid, "writable again")).result["stopReason"] == "end_turn"
        assert await rows(peer, sid) == [
            *committed,
            ("user", "writable again"),
            ("assistant", "You said: «writable again»"),
        ]
        assert (await http.get("/api/sessions", headers={"Authorization": f"Bearer {later}"})).status_code == 200
