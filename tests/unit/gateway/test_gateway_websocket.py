"""`GET /rpc` over a real uvicorn on 127.0.0.1 port 0 with the `websockets` client (R-GW-4, R-GW-1, R-WIRE-2)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from gateway_env import Env, EnvFactory
from gc_probe import cyclic_garbage
from waiting import until
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin

from gateway.server import GatewayHandle
from rpc.transports.websocket import WS_SIZE_MARGIN

Serve = Callable[..., Awaitable[GatewayHandle]]
TIMEOUT = 5.0


@asynccontextmanager
async def ws(url: str, **kw: Any) -> AsyncIterator[ClientConnection]:
    async with connect(url, proxy=None, open_timeout=TIMEOUT, max_size=None, **kw) as conn:
        yield conn


class Rpc:
    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        self.next_id = 0

    async def recv(self) -> dict[str, Any]:
        message = await asyncio.wait_for(self.conn.recv(), TIMEOUT)
        assert isinstance(message, str), "the daemon answers in text frames"
        result: dict[str, Any] = orjson.loads(message)
        return result

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self.next_id}
        if params is not None:
            frame["params"] = params
        await self.conn.send(orjson.dumps(frame).decode())
        response = await self.recv()
        assert response["id"] == self.next_id
        return response


def code_of(response: dict[str, Any]) -> int:
    code: int = response["error"]["code"]
    return code


@pytest.mark.req("R-GW-4")
async def test_initialize_with_auth_token_then_status(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    assert gateway.ws_url == f"ws://127.0.0.1:{gateway.port}/rpc"
    _, token = await env.token("alice")
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        init = await rpc.call("initialize", {"protocolVersion": 1, "authToken": token})
        assert init["result"]["principal"] == {"id": "user:alice", "admin": False}
        status = await rpc.call("status")
        assert status["result"]["connections"] == 1
    await until(lambda: not env.server.connections, TIMEOUT)


@pytest.mark.req("R-GW-4")
async def test_permessage_deflate_is_declined_and_frames_go_uncompressed(env: Env, serve: Serve) -> None:
    """Decision (docs/gateway.md): the client offers permessage-deflate (the `websockets` default, as browsers do);
    the gateway declines it, so no frame is compressed, and the connection works without it."""
    gateway = await serve(env)
    _, token = await env.token("alice")
    async with ws(gateway.ws_url) as conn:
        assert conn.request is not None and conn.response is not None
        assert "permessage-deflate" in conn.request.headers["Sec-WebSocket-Extensions"]
        assert "Sec-WebSocket-Extensions" not in conn.response.headers
        assert conn.protocol.extensions == []
        rpc = Rpc(conn)
        assert "result" in await rpc.call("initialize", {"protocolVersion": 1, "authToken": token})


@pytest.mark.req("R-GW-4")
async def test_bearer_on_the_upgrade_authenticates_initialize(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    _, token = await env.token("boss")
    async with ws(gateway.ws_url, additional_headers={"Authorization": f"Bearer {token}"}) as conn:
        rpc = Rpc(conn)
        init = await rpc.call("initialize", {})
        assert init["result"]["principal"]["admin"] is True
        assert "result" in await rpc.call("status")


@pytest.mark.req("R-AUTH-3")
async def test_without_a_token_initialize_is_32010(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        assert code_of(await rpc.call("status")) == -32010  # before initialize
        assert code_of(await rpc.call("initialize", {"protocolVersion": 1})) == -32010
        assert code_of(await rpc.call("initialize", {"authToken": "zc_" + "1" * 64})) == -32010
    env.services.audit.flush()  # lines are written by the audit log's thread
    entries = [orjson.loads(x) for x in env.services.paths.audit_log.read_text().splitlines()]
    assert any(e["event"] == "denied" and e["peer"].startswith("ws:127.0.0.1:") for e in entries)


@pytest.mark.req("R-WIRE-3")
async def test_envelope_errors_keep_the_socket_usable(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    _, token = await env.token()
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        await rpc.call("initialize", {"authToken": token})
        await conn.send("{not json")
        parse = await rpc.recv()
        assert (parse["id"], code_of(parse), parse["error"]["data"]["kind"]) == (None, -32700, "parse_error")
        await conn.send(b'{"jsonrpc":"2.0","method":"status","id":99}')  # a binary frame
        binary = await rpc.recv()
        assert (binary["id"], code_of(binary)) == (None, -32700)
        await conn.send('[{"jsonrpc":"2.0","method":"status","id":1}]')
        assert code_of(await rpc.recv()) == -32600
        await conn.send('{"jsonrpc":"2.0","method":"status","params":null,"id":7}')
        invalid = await rpc.recv()
        assert (invalid["id"], code_of(invalid)) == (7, -32600)
        assert code_of(await rpc.call("no/such")) == -32601
        assert "result" in await rpc.call("status")


@pytest.mark.req("R-WIRE-2")
async def test_a_frame_just_over_the_limit_gets_an_error_then_close_1009(make_env: EnvFactory, serve: Serve) -> None:
    env = await make_env(max_frame_bytes=1024)
    gateway = await serve(env)
    _, token = await env.token()
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        await rpc.call("initialize", {"authToken": token})
        exact = '{"jsonrpc":"2.0","method":"status","id":1,"pad":"' + "é" * 100
        exact += "x" * (1024 - len(exact.encode()) - 2) + '"}'
        assert len(exact.encode()) == 1024
        await conn.send(exact)
        assert "result" in await rpc.recv()  # exactly the limit is fine
        over = "x" * 1022 + "éé"  # 1024 characters, 1026 UTF-8 bytes: the byte length counts
        await conn.send(over)
        error = await rpc.recv()
        assert error["id"] is None
        assert error["error"]["code"] == -32600
        assert error["error"]["data"] == {"kind": "frame_too_large", "limit": 1024}
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(conn.recv(), TIMEOUT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    await until(lambda: not env.server.connections, TIMEOUT)


@pytest.mark.req("R-WIRE-2")
async def test_far_over_the_limit_the_websocket_layer_closes_1009(make_env: EnvFactory, serve: Serve) -> None:
    env = await make_env(max_frame_bytes=1024)
    gateway = await serve(env)
    async with ws(gateway.ws_url) as conn:
        await conn.send("x" * (1024 + WS_SIZE_MARGIN + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(conn.recv(), TIMEOUT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    await until(lambda: not env.server.connections, TIMEOUT)


@pytest.mark.req("R-FILE-5")
async def test_a_local_only_method_is_32012_local_only(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    _, token = await env.token()  # admin: grants are not the reason
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        await rpc.call("initialize", {"authToken": token})
        response = await rpc.call("test/local")
        assert code_of(response) == -32012
        assert response["error"]["data"]["kind"] == "local_only"


@pytest.mark.req("R-AUTH-4")
async def test_a_token_revoked_mid_connection_fails_the_next_call(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    token_id, token = await env.token("alice")
    async with ws(gateway.ws_url) as conn:
        rpc = Rpc(conn)
        await rpc.call("initialize", {"authToken": token})
        assert "result" in await rpc.call("status")
        await env.services.pairing.revoke(token_id)
        assert code_of(await rpc.call("status")) == -32010


@pytest.mark.req("R-LIM")
async def test_over_the_connection_cap_a_websocket_gets_32005_and_close(make_env: EnvFactory, serve: Serve) -> None:
    env = await make_env(max_connections=1)
    gateway = await serve(env)
    async with ws(gateway.ws_url) as first:
        await Rpc(first).call("initialize", {})  # answered -32010, but counted
        async with ws(gateway.ws_url) as second:
            refusal = await Rpc(second).recv()
            assert refusal["id"] is None
            assert refusal["error"]["code"] == -32005
            assert refusal["error"]["data"]["name"] == "connections"
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(second.recv(), TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert len(env.server.connections) == 1
    await until(lambda: not env.server.connections, TIMEOUT)


@pytest.mark.req("R-GW-6")
async def test_origin_must_be_absent_or_the_same_host(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    with pytest.raises(InvalidStatus) as refused:
        async with ws(gateway.ws_url, origin=Origin("http://evil.example")):
            pass
    assert refused.value.response.status_code == 403
    assert orjson.loads(refused.value.response.body)["error"]["kind"] == "forbidden"
    assert refused.value.response.headers["Server"] == "zeroclaw"
    async with ws(gateway.ws_url, origin=Origin(gateway.url)) as conn:
        assert code_of(await Rpc(conn).call("status")) == -32010
    await until(lambda: not env.server.connections, TIMEOUT)


@pytest.mark.req("R-GW-1")
async def test_http_on_the_real_server_and_close(env: Env, serve: Serve) -> None:
    gateway = await serve(env)
    async with httpx.AsyncClient(base_url=gateway.url, trust_env=False) as client:
        response = await client.get("/health")
    assert response.status_code == 200
    assert response.headers.get_list("server") == ["zeroclaw"]
    async with ws(gateway.ws_url) as conn:
        await gateway.close()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(conn.recv(), TIMEOUT)
    assert not env.server.connections
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient(base_url=gateway.url, trust_env=False) as client:
            await client.get("/health")


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.mark.req("R-GW-1")
async def test_tls_wss_with_a_self_signed_certificate(env: Env, serve: Serve, tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    gateway = await serve(env, tls_cert=str(cert), tls_key=str(key))
    assert gateway.url.startswith("https://") and gateway.ws_url.startswith("wss://")
    context = ssl.create_default_context(cafile=str(cert))
    _, token = await env.token()
    async with ws(gateway.ws_url, ssl=context) as conn:
        rpc = Rpc(conn)
        await rpc.call("initialize", {"authToken": token})
        assert "result" in await rpc.call("status")
    async with httpx.AsyncClient(base_url=gateway.url, verify=context, trust_env=False) as client:
        assert (await client.get("/health")).status_code == 200


@pytest.mark.req("R-LIM")
async def test_closed_websocket_connections_leave_no_cyclic_garbage(env: Env, serve: Serve) -> None:
    """A WebSocket peer that leaves is freed by reference counting alone: its cancelled writer task no longer holds
    the transport, nor the transport its connection (docs/limits.md "Garbage")."""
    gateway = await serve(env)
    _, token = await env.token("alice")
    with cyclic_garbage() as garbage:
        for _ in range(5):
            async with ws(gateway.ws_url) as conn:
                rpc = Rpc(conn)
                assert "result" in await rpc.call("initialize", {"protocolVersion": 1, "authToken": token})
                assert "result" in await rpc.call("status")
        await until(lambda: not env.server.connections, TIMEOUT)
    ours = {"Connection", "CallContext", "WebSocketTransport", "FlowControl"}
    assert not ours & set(garbage), garbage
