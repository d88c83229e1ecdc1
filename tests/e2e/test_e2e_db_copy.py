"""`zeroclaw db copy` (docs/operations.md): a SQLite database with sessions, transcripts and pairing tokens moves to
the backend under test, and a daemon there serves exactly what the old one did (R-STORE-1).

The source is always a SQLite file (what an existing installation has); the target is a fresh database on
`ZEROCLAW_TEST_DATABASE_URL` in the PostgreSQL pass, another SQLite file otherwise.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import db_backend
import pytest
from e2e_harness import REPO_ROOT, Daemon, DaemonFactory, clean_env, zeroclaw_command
from session_client import Peer, new_sid, pair

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-STORE-1")]

CONFIG = """\
[permission_profiles.runner]
grants = { sessions = ["read"] }

[users.alice]
permission_profiles = ["runner"]
"""


def zeroclaw(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*zeroclaw_command(), *args],
        cwd=REPO_ROOT,
        env=clean_env(daemon.home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def with_storage(url: str) -> str:
    return f'{CONFIG}\n[storage]\nurl = "{url}"\n'


async def served(daemon: Daemon, sids: list[str]) -> dict[str, Any]:
    """What a client can read back: the session list, every transcript, the pairing tokens."""
    async with await Peer.open(daemon) as owner:
        listed = await owner.call("session/list")
        messages = {sid: await owner.call("session/messages", {"sessionId": sid, "limit": 1000}) for sid in sids}
        tokens = await owner.call("pairing/list")
    sessions = sorted(listed["sessions"], key=lambda s: (s["mode"], s["sessionId"]))
    return {"sessions": [{k: v for k, v in s.items() if k != "live"} for s in sessions], "messages": messages, **tokens}


async def test_a_sqlite_database_moves_to_another_and_is_served_from_there(daemon_factory: DaemonFactory) -> None:
    source_root = daemon_factory.tmpdir()
    source_url = db_backend.default_url(source_root)
    old = daemon_factory.start(with_storage(source_url))
    async with await Peer.open(old) as owner:
        acp = await new_sid(owner)
        assert (await owner.prompt(acp, "hello there")).result["stopReason"] == "end_turn"
        assert (await owner.prompt(acp, "and again")).result["stopReason"] == "end_turn"
        chat = await new_sid(owner, mode="chat")
        assert (await owner.prompt(chat, "a chat line")).result["stopReason"] == "end_turn"
        # R-MODEL-4: the settings columns move too (compared through session/list below)
        await owner.call("session/configure", {"sessionId": chat, "model": "moved-model", "temperature": 0.4})
        killed = await new_sid(owner)
        await owner.prompt(killed, "short-lived")
        await owner.call("session/kill", {"sessionId": killed})
        token = (await pair(owner, "alice", label="moved"))["token"]
    async with await Peer.open(old, token=token) as alice:  # a token that has been used: lastUsedAt is set
        await alice.call("session/list")
    before = await served(old, [acp, chat, killed])
    assert len(before["messages"][acp]["messages"]) >= 4 and before["tokens"], before
    assert [(s["model"], s["temperature"]) for s in before["sessions"] if s["sessionId"] == chat] == [
        ("moved-model", 0.4)
    ]

    # The daemon holds its database: the copy refuses until it is stopped.
    target_root = daemon_factory.tmpdir()
    target_url = daemon_factory.database_url(target_root) or db_backend.default_url(target_root)
    busy = zeroclaw(old, "db", "copy", "--from", source_url, "--to", target_url)
    assert busy.returncode == 1 and "already uses the database" in busy.stderr, busy.stderr
    assert old.stop() == 0

    # Default --from: the database the config dir names.
    done = zeroclaw(old, "db", "--config-dir", str(old.config_dir), "copy", "--to", target_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("copied ") and "pairing_tokens 1" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr

    new = daemon_factory.start(with_storage(target_url))
    assert await served(new, [acp, chat, killed]) == before
    async with await Peer.open(new, token=token) as alice:  # the copied token still authenticates
        await alice.call("session/list")
    async with await Peer.open(new) as owner:  # and the copied session goes on where it was
        turn = await owner.prompt(acp, "after the move")
        assert turn.result["stopReason"] == "end_turn", turn.result
        assert (await owner.call("session/messages", {"sessionId": acp}))["total"] > before["messages"][acp]["total"]

    # Into a database that holds rows: refused, nothing changed.
    assert new.stop() == 0
    again = zeroclaw(new, "db", "copy", "--from", source_url, "--to", target_url)
    assert again.returncode == 1, again.stderr
    assert "is not empty" in again.stderr and len(again.stderr.strip().splitlines()) == 1, again.stderr
