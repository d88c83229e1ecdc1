"""Pairing tokens over a real socket (R-AUTH-3, R-AUTH-4): create, list, revoke, use, and what is stored."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from typing import Any

import db_backend
import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, pair

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

TOKEN_RE = re.compile(r"^zc_[0-9a-f]{64}$")
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")

CONFIG = """\
[permission_profiles.runner]
grants = { sessions = ["read"] }

[permission_profiles.pairer]
grants = { pairing = ["create", "read", "delete"], sessions = ["read"] }

[users.alice]
permission_profiles = ["runner"]

[users.bob]
permission_profiles = ["runner"]

[users.paula]
permission_profiles = ["pairer"]
"""


@pytest.fixture(scope="module")
def pair_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


async def listed(owner: Peer, token_id: str) -> dict[str, Any] | None:
    tokens = (await owner.call("pairing/list"))["tokens"]
    return next((t for t in tokens if t["tokenId"] == token_id), None)


async def init_error(d: Daemon, token: str) -> tuple[int, dict[str, Any]]:
    peer = Peer(await d.connect())
    async with peer:
        code, data = await peer.error("initialize", {"protocolVersion": 1, "authToken": token})
        # a failed initialize leaves the connection unauthenticated
        status_code, _ = await peer.error("status")
        assert status_code == -32010
    return code, data


@pytest.mark.req("R-AUTH-4")
async def test_create_shows_the_token_once_and_list_never_does(pair_daemon: Daemon) -> None:
    async with await Peer.open(pair_daemon) as owner:
        created = await pair(owner, "alice", label="alice laptop")
        assert set(created) == {"tokenId", "token", "user", "createdAt"}, created
        assert TOKEN_RE.match(created["token"]), created
        assert created["user"] == "alice"
        assert ISO_RE.match(created["createdAt"]), created
        tokens = (await owner.call("pairing/list"))["tokens"]
        entry = next(t for t in tokens if t["tokenId"] == created["tokenId"])
        assert entry == {
            "tokenId": created["tokenId"],
            "user": "alice",
            "label": "alice laptop",
            "createdAt": created["createdAt"],
            "lastUsedAt": None,
        }
        list_frames = [f for f in owner.frames if "result" in f and "tokens" in f["result"]]
        assert list_frames and all(created["token"] not in json.dumps(f) for f in list_frames)
        # two tokens are two different secrets
        other = await pair(owner, "alice")
        assert other["token"] != created["token"] and other["tokenId"] != created["tokenId"]


@pytest.mark.req("R-AUTH-4")
@pytest.mark.req("R-AUTH-3")
async def test_last_used_at_is_set_by_use_and_the_token_acts_as_its_user(pair_daemon: Daemon) -> None:
    async with await Peer.open(pair_daemon) as owner:
        created = await pair(owner, "bob")
        assert (await listed(owner, created["tokenId"]) or {}).get("lastUsedAt", "missing") is None
        bob = Peer(await pair_daemon.connect())
        async with bob:
            init = await bob.call("initialize", {"protocolVersion": 1, "authToken": created["token"]})
            assert init["principal"] == {"id": "user:bob", "admin": False}, init
            entry = await listed(owner, created["tokenId"])
            assert entry is not None
            assert isinstance(entry["lastUsedAt"], str) and ISO_RE.match(entry["lastUsedAt"]), entry
            assert entry["lastUsedAt"] >= entry["createdAt"]
            # bob holds only what his profile grants
            assert (await bob.call("session/list"))["sessions"] == []
            code, data = await bob.error("pairing/list")
            assert code == -32012 and data["grant"] == "pairing:read", data


@pytest.mark.req("R-AUTH-4")
async def test_revoke_applies_to_the_open_connection_at_its_next_call(pair_daemon: Daemon) -> None:
    async with await Peer.open(pair_daemon) as owner:
        doomed = await pair(owner, "alice", label="doomed")
        kept = await pair(owner, "alice", label="kept")
        a1 = await Peer.open(pair_daemon, token=doomed["token"])
        a2 = await Peer.open(pair_daemon, token=kept["token"])
        async with a1, a2:
            assert (await a1.call("session/list"))["sessions"] == []
            assert await owner.call("pairing/revoke", {"tokenId": doomed["tokenId"]}) == {
                "tokenId": doomed["tokenId"],
                "revoked": True,
            }
            code, data = await a1.error("session/list")
            assert code == -32010, data
            assert data["kind"] == "auth_required", data
            # the same user's other token is untouched
            assert (await a2.call("session/list"))["sessions"] == []
        assert await listed(owner, doomed["tokenId"]) is None
        assert await listed(owner, kept["tokenId"]) is not None
        code, _ = await init_error(pair_daemon, doomed["token"])
        assert code == -32010
        # revoking again: nothing to revoke
        code, data = await owner.error("pairing/revoke", {"tokenId": doomed["tokenId"]})
        assert code == -32602, data


@pytest.mark.req("R-AUTH-3")
@pytest.mark.parametrize("token", ["zc_" + "0" * 64, "zc_" + "ab" * 32, "not-a-token", "ZC_" + "A" * 64])
async def test_initialize_with_an_unknown_token_is_refused(pair_daemon: Daemon, token: str) -> None:
    code, data = await init_error(pair_daemon, token)
    assert code == -32010, data
    assert data["kind"] == "auth_required", data
    assert token not in json.dumps(data)


@pytest.mark.req("R-AUTH-4")
async def test_non_admin_may_pair_only_its_own_user(pair_daemon: Daemon) -> None:
    async with await Peer.open(pair_daemon) as owner:
        paula = await Peer.open(pair_daemon, token=(await pair(owner, "paula"))["token"])
        async with paula:
            code, data = await paula.error("pairing/create", {"user": "alice"})
            assert code == -32012, data
            assert data["kind"] == "forbidden", data
            own = await paula.call("pairing/create", {"user": "paula", "label": "self"})
            assert TOKEN_RE.match(own["token"]) and own["user"] == "paula"
            assert await paula.call("pairing/revoke", {"tokenId": own["tokenId"]}) == {
                "tokenId": own["tokenId"],
                "revoked": True,
            }
        alice = await Peer.open(pair_daemon, token=(await pair(owner, "alice"))["token"])
        async with alice:
            code, data = await alice.error("pairing/create", {"user": "alice"})
            assert code == -32012 and data["grant"] == "pairing:create", data


@pytest.mark.req("R-AUTH-4")
async def test_pairing_an_unknown_user_is_invalid_params(pair_daemon: Daemon) -> None:
    async with await Peer.open(pair_daemon) as owner:
        before = (await owner.call("pairing/list"))["tokens"]
        code, data = await owner.error("pairing/create", {"user": "nobody"})
        assert code == -32602, data
        assert (await owner.call("pairing/list"))["tokens"] == before


@pytest.mark.req("R-AUTH-4")
async def test_the_plain_token_is_never_stored_or_logged(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG)
    async with await Peer.open(d) as owner:
        created = await pair(owner, "alice", label="secret-check")
        async with await Peer.open(d, token=created["token"]) as alice:
            await alice.call("session/list")
        await owner.call("pairing/list")
        await owner.call("status")
    token = created["token"]
    # Every row as the database returns it (any backend) and, on SQLite, the raw files (the WAL holds the commit).
    stored = repr(db_backend.query(d.database_url, "SELECT * FROM pairing_tokens")).encode()
    if db_backend.backend() == "sqlite":
        db_files = sorted(d.data_dir.glob("zeroclaw.db*"))
        assert db_files, list(d.data_dir.iterdir())
        stored += b"".join(p.read_bytes() for p in db_files)
    assert token.encode() not in stored, "the plain token is in the database"
    assert token[3:].encode() not in stored and bytes.fromhex(token[3:]) not in stored
    digest = hashlib.sha256(token.encode()).digest()
    assert digest.hex().encode() in stored or digest in stored, "expected only the token's SHA-256 to be stored"
    audit = d.audit_path.read_bytes() if d.audit_path.exists() else b""
    assert token.encode() not in audit and token[3:].encode() not in audit
    assert token not in d.stderr
