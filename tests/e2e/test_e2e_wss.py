"""zerocode's remote mode (SPEC §21, R-SVC-4): the `[wss]` listener, against a real daemon over `wss://`.

The peer is the zerocode emulation of `test_e2e_zerocode` (every frame from `zerocode_frames`, every answer judged
as zerocode reads it), carried over a TLS WebSocket whose server certificate a throw-away CA made here signed.
It connects as zerocode 0.8.4 does with `--connect wss://HOST:PORT/?token=zc_…`: the URL is sent as is (query
included), and `initialize` carries neither `env` nor `tui_id` (zc:client.rs:731-837; docs/zerocode.md).
"""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
from pathlib import Path
from typing import Any, cast

import pytest
import zerocode_frames as zc
from e2e_harness import Client, Daemon, DaemonFactory
from test_e2e_zerocode import Zerocode, completed
from throwaway_ca import ServerFiles, make_ca_and_server_cert
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

REMOTE_RE = re.compile(r"^zeroclaw daemon: zerocode remote mode on (?P<url>wss://\S+)$")
NO_TLS_LINE = (
    "zeroclaw daemon: [wss] is enabled without TLS: set [wss] tls_cert and tls_key (remote mode serves wss:// only)"
)
# The profile docs/zerocode.md shows (Remote mode): what zerocode's start-up and a chat turn need, no admin.
USERS = """\
[permission_profiles.laptop]
grants = { sessions = ["*"], agents = ["read"], config = ["read"], system = ["read"] }
allowed_agents = ["*"]

[users.laptop]
permission_profiles = ["laptop"]
"""


def wss_config(files: ServerFiles) -> str:
    return (
        f'{USERS}\n[wss]\nenabled = true\nhost = "127.0.0.1"\nport = 0\n'
        f"tls_cert = {json.dumps(str(files.cert))}\ntls_key = {json.dumps(str(files.key))}\n"
    )


class WssLines:
    """A `wss://` connection in the shape the `Zerocode` emulation reads a harness `Client`: one message a line."""

    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        self.reader = self

    async def readline(self) -> bytes:
        try:
            message = await self.conn.recv()
        except ConnectionClosed:
            return b""
        return (message if isinstance(message, bytes) else message.encode()) + b"\n"

    async def send_raw(self, data: bytes, timeout: float = 5.0) -> None:
        await self.conn.send(data.decode().rstrip("\n"))  # zerocode: one JSON text per message (zc:client.rs:755)

    async def close(self) -> None:
        await self.conn.close()


class Remote:
    """A daemon serving `[wss]`, with the CA its clients trust."""

    def __init__(self, daemon: Daemon, files: ServerFiles) -> None:
        self.daemon = daemon
        self.files = files
        found = next((m for line in daemon.stderr_lines if (m := REMOTE_RE.match(line))), None)
        assert found is not None, daemon.describe()
        self.url = found["url"]

    async def pair(self, user: str = "laptop") -> dict[str, Any]:
        """`pairing/create` on the local socket, as `zeroclaw pair --user laptop` does."""
        async with await self.daemon.client() as owner:
            return cast("dict[str, Any]", await owner.call("pairing/create", {"user": user}))

    def connect(self, query: str = "", headers: dict[str, str] | None = None) -> Any:
        return connect(f"{self.url}/{query}", ssl=self.files.client_context(), additional_headers=headers)

    async def refused(self, query: str = "", headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """The upgrade is refused with an HTTP status: no WebSocket, so no method could be called."""
        with pytest.raises(InvalidStatus) as refused:
            async with self.connect(query, headers):
                pass
        response = refused.value.response
        return response.status_code, json.loads(response.body or b"{}")

    async def zerocode(self, token: str) -> tuple[Zerocode, dict[str, Any]]:
        """Connect and `initialize` exactly as zerocode's `connect_wss` does (zc:client.rs:817-837)."""
        conn = await self.connect(f"?token={token}")
        peer = Zerocode(cast("Client", WssLines(conn)), "zerocode-wss")
        frame = await peer.request(
            "initialize", zc.initialize_params(transport="wss"), timeout=zc.INITIALIZE_TIMEOUT_SECS
        )
        return peer, peer.ok(frame, "initialize")


@pytest.fixture
def remote(daemon_factory: DaemonFactory) -> Remote:
    root = daemon_factory.tmpdir()
    files = make_ca_and_server_cert(root / "tls")
    return Remote(daemon_factory.start(wss_config(files), root=root), files)


def secrets_absent(daemon: Daemon, *tokens: str) -> None:
    text = daemon.stderr + (daemon.audit_path.read_text() if daemon.audit_path.exists() else "")
    for token in tokens:
        assert token not in text


@pytest.mark.req("R-SVC-4")
async def test_a_paired_zerocode_connects_and_runs_a_turn(remote: Remote) -> None:
    paired = await remote.pair()
    peer, init = await remote.zerocode(paired["token"])
    async with peer:
        # The zerocode dialect although this initialize has neither env nor tui_id (R-ZC-1 alone would not say so).
        checked = zc.check_initialize_result(init)
        assert init["server_version"] == "0.8.4" and init["protocol_version"] == 1, init
        assert "serverVersion" not in init, init
        assert checked["tui_id"], init
        # zerocode's fatal start-up calls (Config and Logs panes, zc:config_manager.rs:414-420, zc:logs.rs:519-525)
        zc.check_config_sections_result(await peer.call("config/sections", zc.FRAMES["config/sections"]))
        zc.check_config_templates_result(await peer.call("config/templates", zc.FRAMES["config/templates"]))
        assert await peer.call("logs/subscribe", zc.FRAMES["logs/subscribe"]) == {"subscribed": True}
        zc.check_session_list_result(
            await peer.call("session/list-acp", zc.FRAMES["session/list-acp"]), "session/list-acp"
        )
        agents = zc.check_agents_status_result(await peer.call("agents/status", zc.FRAMES["agents/status"]))
        alias = next(a["alias"] for a in agents if a["enabled"])
        # Over WSS the chat pane sends no cwd: the daemon uses the agent's workspace (zc:chat.rs:446-451).
        peer.tui_id = checked["tui_id"]
        created = await peer.call("session/new", zc.session_new_chat_params(alias, None, peer.tui_id))
        zc.check_session_new_result(created)
        sid = created["session_id"]
        updates = await peer.turn(sid, "hello over wss")
        assert completed(updates)["content"] == "You said: «hello over wss»", updates
        status = zc.check_status_result(await peer.call("status", zc.FRAMES["status"]))
        assert status["server_version"] == "0.8.4", status
        peer.assert_clean()
    entries = await remote.daemon.wait_audit(lambda es: any(e["event"] == "initialize" for e in es))
    initialized = [e for e in entries if e["event"] == "initialize"]
    assert initialized[-1]["principal"] == "user:laptop", entries
    assert initialized[-1]["peer"].startswith("ws:127.0.0.1:"), entries
    secrets_absent(remote.daemon, paired["token"])


@pytest.mark.req("R-SVC-4")
async def test_a_bearer_header_works_and_every_connection_speaks_the_zerocode_dialect(remote: Remote) -> None:
    paired = await remote.pair()
    headers = {"Authorization": f"Bearer {paired['token']}"}
    async with remote.connect("", headers) as conn:
        # A generic client's camelCase initialize: on this listener it is answered in the zerocode dialect too.
        await conn.send(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        )
        answer = json.loads(await conn.recv())
        assert answer["result"]["server_version"] == "0.8.4", answer
        assert "serverVersion" not in answer["result"], answer


@pytest.mark.req("R-SVC-4")
@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ("", None),  # no credential at all
        ("?token=", None),
        ("?token=zc_" + "0" * 64, None),  # well-formed, never paired
        ("?token=not-a-token", None),
        ("", {"Authorization": "Bearer zc_" + "1" * 64}),
        ("", {"Authorization": "Basic bGFwdG9wOnB3"}),
    ],
)
async def test_a_peer_without_a_paired_token_is_refused_before_any_method(
    remote: Remote, query: str, headers: dict[str, str] | None
) -> None:
    status, body = await remote.refused(query, headers)
    assert status == 401, body
    assert body["error"]["kind"] == "auth_required", body
    entries = await remote.daemon.wait_audit(lambda es: any(e["event"] == "denied" for e in es))
    assert not [e for e in entries if e["event"] in ("connect", "initialize")], entries  # never reached the dispatcher
    denied = [e for e in entries if e["event"] == "denied"]
    assert denied[-1]["peer"].startswith("ws:127.0.0.1:") and denied[-1]["principal"] is None, entries


@pytest.mark.req("R-SVC-4")
async def test_a_revoked_token_is_refused_and_its_open_connection_loses_its_calls(remote: Remote) -> None:
    doomed = await remote.pair()
    kept = await remote.pair()
    peer, _ = await remote.zerocode(doomed["token"])
    other, _ = await remote.zerocode(kept["token"])
    async with peer, other:
        await peer.call("status", zc.FRAMES["status"])
        async with await remote.daemon.client() as owner:
            revoked = await owner.call("pairing/revoke", {"tokenId": doomed["tokenId"]})
        assert revoked == {"tokenId": doomed["tokenId"], "revoked": True}, revoked
        # The open connection: its next call is refused (R-AUTH-4); the same user's other token is untouched.
        frame = await peer.request("status", zc.FRAMES["status"])
        assert frame["error"]["code"] == -32010, frame
        await other.call("status", zc.FRAMES["status"])
    # A new connection with the revoked token: refused at the upgrade, before any method.
    status, body = await remote.refused(f"?token={doomed['token']}")
    assert status == 401 and body["error"]["kind"] == "auth_required", body
    secrets_absent(remote.daemon, doomed["token"], kept["token"])


@pytest.mark.req("R-SVC-4")
async def test_the_listener_speaks_tls_only(remote: Remote) -> None:
    paired = await remote.pair()
    plain = remote.url.replace("wss://", "ws://", 1)
    with pytest.raises((InvalidHandshake, OSError)):  # the server answers a TLS alert, not HTTP
        async with connect(f"{plain}/?token={paired['token']}", open_timeout=5):
            pass
    # A client that does not trust the daemon's CA does not get past the handshake.
    with pytest.raises(ssl.SSLCertVerificationError):
        async with connect(f"{remote.url}/?token={paired['token']}", ssl=ssl.create_default_context()):
            pass


@pytest.mark.req("R-SVC-4")
async def test_the_listener_is_off_by_default(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start(USERS)
    assert not any(REMOTE_RE.match(line) for line in d.stderr_lines), d.describe()
    async with await d.client() as c:
        assert (await c.call("config/get", {"prop": "wss.enabled"}))["value"] is False
    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex(("127.0.0.1", 9781)) != 0, "nothing listens on [wss]'s default port"


@pytest.mark.req("R-SVC-4")
@pytest.mark.parametrize("tls", ["", 'tls_cert = "/etc/hostname"\n', 'tls_key = "/etc/hostname"\n'])
async def test_enabled_without_tls_is_one_startup_line(daemon_factory: DaemonFactory, tls: str) -> None:
    d = daemon_factory.spawn(f"{USERS}\n[wss]\nenabled = true\nport = 0\n{tls}")
    assert d.wait_exit(10) == 1
    lines = [line for line in d.stderr_lines if line.strip()]
    assert lines[-1] == NO_TLS_LINE, d.describe()
    assert "Traceback" not in d.stderr, d.describe()
    assert not Path(d.socket_path).exists(), "it refused before anything listened"


@pytest.mark.req("R-SVC-4")
async def test_a_busy_port_or_unreadable_tls_files_is_one_startup_line(daemon_factory: DaemonFactory) -> None:
    root = daemon_factory.tmpdir()
    files = make_ca_and_server_cert(root / "tls")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        d = daemon_factory.spawn(wss_config(files).replace("port = 0", f"port = {port}"), root=root)
        assert d.wait_exit(10) == 1
    last = [line for line in d.stderr_lines if line.strip()][-1]
    assert last.startswith(f"zeroclaw daemon: the [wss] listener cannot listen on 127.0.0.1:{port}"), d.describe()
    missing = daemon_factory.spawn(wss_config(files).replace(str(files.key), str(root / "nowhere.key")))
    assert missing.wait_exit(10) == 1
    last = [line for line in missing.stderr_lines if line.strip()][-1]
    assert last.startswith("zeroclaw daemon: cannot load the [wss] listener TLS certificate or key"), missing.describe()
    assert "Traceback" not in d.stderr + missing.stderr
