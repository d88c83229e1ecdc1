"""One refusal, one `denied` line in `<data_dir>/logs/audit.log`, on every surface (R-SEC-3).

The story: a refused `file/upload/begin` wrote two `denied` lines, one from the files handler and one from the
connection's error path. These count the lines in the file the daemon writes. The audit log's own thread writes a
line a moment after the answer goes out, so a count waits for the lines expected, then a moment more for a duplicate.
"""

from __future__ import annotations

import asyncio
import base64
import os

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory
from session_client import Peer, open_token_peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """\
[permission_profiles.uploader]
grants = { sessions = ["create", "execute", "read"], files = ["create"] }
allowed_agents = ["*"]

[permission_profiles.admin]
admin = true

[users.alice]
permission_profiles = ["uploader"]

[users.ops]
permission_profiles = ["admin"]
"""


SETTLE = 0.2  # seconds for a duplicate line to show after the expected ones


def denied(d: Daemon, principal: str | None = None) -> list[dict[str, object]]:
    return [e for e in d.audit_entries() if e["event"] == "denied" and e["principal"] == principal]


async def denied_count(d: Daemon, principal: str | None = None, *, at_least: int) -> int:
    """`denied` lines once at least `at_least` are there and a moment more went by, for a second line to show: the
    audit log's thread writes a line a moment after the answer (app/audit.py)."""
    await d.wait_audit(
        lambda entries: sum(e["event"] == "denied" and e["principal"] == principal for e in entries) >= at_least
    )
    await asyncio.sleep(SETTLE)
    return len(denied(d, principal))


@pytest.mark.req("R-SEC-3")
async def test_a_refused_upload_begin_is_one_denied_line(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG)
    async with await Peer.open(d) as owner:
        alice = await open_token_peer(d, owner, "alice")
        try:
            sid = (await alice.new_session())["sessionId"]
            await owner.call("config/set", {"prop": "permission_profiles.uploader.allowed_agents", "value": []})
            code, err = await alice.error("file/upload/begin", {"session_id": sid, "size_bytes": 1})
            assert code == -32012 and err.get("agent") is True, err
            assert await denied_count(d, "user:alice", at_least=1) == 1, d.audit_entries()
            code, _ = await alice.error("file/attach", {"session_id": sid, "files": [{"data_b64": "eA=="}]})
            assert code == -32012
            assert await denied_count(d, "user:alice", at_least=2) == 2, d.audit_entries()
        finally:
            await alice.close()


@pytest.mark.req("R-SEC-3")
async def test_a_commit_refused_after_the_grant_went_is_one_denied_line(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG)
    async with await Peer.open(d) as owner:
        alice = await open_token_peer(d, owner, "alice")
        try:
            sid = (await alice.new_session())["sessionId"]
            up = (await alice.call("file/upload/begin", {"session_id": sid, "size_bytes": 3}))["upload_id"]
            chunk = {"upload_id": up, "offset": 0, "data_b64": base64.b64encode(b"abc").decode()}
            await alice.call("file/upload/chunk", chunk)
            grants = {"sessions": ["create", "execute", "read"]}
            await owner.call("config/set", {"prop": "permission_profiles.uploader.grants", "value": grants})
            code, err = await alice.error("file/upload/commit", {"upload_id": up})
            assert code == -32012 and err["grant"] == "files:create", err
            assert await denied_count(d, "user:alice", at_least=1) == 1, d.audit_entries()
        finally:
            await alice.close()


@pytest.mark.req("R-SEC-3")
@pytest.mark.req("R-GW-6")
async def test_rest_refusals_are_one_denied_line_each_like_their_rpc_twins(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(CONFIG, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off"
    async with await Peer.open(d) as owner:
        alice = (await owner.call("pairing/create", {"user": "alice"}))["token"]
        owners = (await owner.new_session())["sessionId"]
    async with httpx.AsyncClient(base_url=m["gateway"], trust_env=False) as http:
        before = await denied_count(d, at_least=0)
        # no bearer: 401, as `initialize` without a credential is -32010 over the WebSocket
        assert (await http.get("/api/status")).status_code == 401
        assert await denied_count(d, at_least=before + 1) == before + 1, d.audit_entries()
        # a bearer without the grant: 403, as -32012
        response = await http.get("/api/status", headers={"Authorization": f"Bearer {alice}"})
        assert response.status_code == 403
        assert await denied_count(d, "user:alice", at_least=1) == 1, d.audit_entries()
        assert await denied_count(d, at_least=before + 1) == before + 1
        # another principal's session: 403 `session_not_owned`, which is -32003 over RPC and not a `denied`
        response = await http.get(f"/api/sessions/{owners}/messages", headers={"Authorization": f"Bearer {alice}"})
        assert response.status_code == 403 and response.json()["error"]["kind"] == "session_not_owned"
        assert await denied_count(d, "user:alice", at_least=1) == 1, d.audit_entries()
