"""The Windows named-pipe transport on Linux, with a fake Win32 API and proactor (R-SEC-4, R-PATH-3)."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from waiting import until

from rpc.transports import pipe as pipe_mod
from rpc.transports.pipe import (
    PEER_LABEL,
    PipeEndpointError,
    PipeHandle,
    PipeServer,
    ProactorAccepter,
    build_sddl,
    pipe_name_for,
    pipe_peer,
    serve_pipe,
)
from rpc.transports.win_security import (
    ERROR_ACCESS_DENIED,
    ERROR_PIPE_BUSY,
    FILE_FLAG_FIRST_PIPE_INSTANCE,
    FILE_FLAG_OVERLAPPED,
    PIPE_ACCESS_DUPLEX,
    PIPE_REJECT_REMOTE_CLIENTS,
)

OWNER = "S-1-5-21-1004336348-1177238915-682003330-1001"
NAME = r"\\.\pipe\zeroclaw-d61345cca3f0add9"
PIPE_TYPE_MESSAGE = 0x4
PIPE_READMODE_MESSAGE = 0x2


class AccessDenied(OSError):
    """What CreateNamedPipeW raises on Windows when FIRST_PIPE_INSTANCE meets an existing pipe."""

    winerror = ERROR_ACCESS_DENIED


@dataclass
class Created:
    name: str
    open_mode: int
    pipe_mode: int
    attributes: object
    handle: int


@dataclass
class FakeApi:
    sid: str = OWNER
    fail_create: list[OSError] = field(default_factory=list)  # raised by the next CreateNamedPipeW calls
    created: list[Created] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)
    sddls: list[str] = field(default_factory=list)
    freed: list[object] = field(default_factory=list)
    next_handle: int = 100

    def current_user_sid(self) -> str:
        return self.sid

    def security_attributes(self, sddl: str) -> object:
        self.sddls.append(sddl)
        return ("SECURITY_ATTRIBUTES", sddl)

    def free_security_attributes(self, attributes: object) -> None:
        self.freed.append(attributes)

    def create_named_pipe(
        self,
        name: str,
        open_mode: int,
        pipe_mode: int,
        max_instances: int,
        out_buffer: int,
        in_buffer: int,
        default_timeout_ms: int,
        attributes: object,
    ) -> int:
        if self.fail_create:
            raise self.fail_create.pop(0)
        self.next_handle += 1
        self.created.append(Created(name, open_mode, pipe_mode, attributes, self.next_handle))
        return self.next_handle

    def close_handle(self, handle: int) -> None:
        self.closed.append(handle)


class FakeAccepter:
    """Stands in for the IOCP proactor: `connect()` plays a client arriving on the listening instance."""

    def __init__(self) -> None:
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self.transports: list[tuple[PipeHandle, asyncio.Protocol, dict[str, Any]]] = []

    async def accept(self, pipe: PipeHandle) -> None:
        key = pipe.fileno()  # -1 once closed, so remember it now
        fut = asyncio.get_running_loop().create_future()
        self.waiting[key] = fut
        try:
            await fut
        finally:
            del self.waiting[key]

    def make_transport(
        self, pipe: PipeHandle, protocol: asyncio.Protocol, extra: dict[str, Any]
    ) -> asyncio.BaseTransport:
        self.transports.append((pipe, protocol, extra))
        return asyncio.BaseTransport(extra)

    async def connect(self, error: OSError | None = None) -> None:
        await until(lambda: len(self.waiting) == 1, interval=0)
        (fut,) = self.waiting.values()
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)
        await asyncio.sleep(0)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def accepter() -> FakeAccepter:
    return FakeAccepter()


class Factory:
    def __init__(self) -> None:
        self.protocols: list[asyncio.Protocol] = []

    def __call__(self) -> asyncio.Protocol:
        self.protocols.append(asyncio.Protocol())
        return self.protocols[-1]


async def start(api: FakeApi, accepter: FakeAccepter, factory: Factory | None = None) -> PipeServer:
    return await serve_pipe(NAME, factory or Factory(), api=api, accepter=accepter)


def aces(sddl: str) -> list[list[str]]:
    return [ace.split(";") for ace in re.findall(r"\(([^)]*)\)", sddl)]


# --- R-PATH-3: the pipe name -------------------------------------------------------------------------------


@pytest.mark.req("R-PATH-3")
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX absolute paths in the vectors")
def test_pipe_name_known_vectors() -> None:
    # sha256(b"/srv/zeroclaw/data") = d61345cca3f0add956f98376...
    assert pipe_name_for(Path("/srv/zeroclaw/data")) == r"\\.\pipe\zeroclaw-d61345cca3f0add9"
    # UTF-8, not the filesystem or locale encoding: sha256("/home/zoë/...".encode("utf-8"))
    assert pipe_name_for(Path("/home/zoë/.local/share/zeroclaw")) == r"\\.\pipe\zeroclaw-24b31d7b33c35762"


@pytest.mark.req("R-PATH-3")
def test_pipe_name_uses_the_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert pipe_name_for(Path("data")) == pipe_name_for(tmp_path / "data")
    assert re.fullmatch(r"\\\\\.\\pipe\\zeroclaw-[0-9a-f]{16}", pipe_name_for(Path("data")))


# --- R-SEC-4: the security descriptor ----------------------------------------------------------------------


@pytest.mark.req("R-SEC-4")
def test_sddl_allows_only_system_and_the_owner_and_is_protected() -> None:
    sddl = build_sddl(OWNER)
    assert sddl.startswith("D:P(")  # protected: nothing inherited from the parent
    entries = aces(sddl)
    assert {e[5] for e in entries if e[0] == "A"} == {"SY", OWNER}
    assert all(e[1] == "" for e in entries)  # no inheritance flags
    assert "WD" not in sddl and "AU" not in sddl and "BU" not in sddl


@pytest.mark.req("R-SEC-4")
def test_sddl_deny_network_is_opt_in_and_comes_first() -> None:
    assert "NU" not in build_sddl(OWNER)
    entries = aces(build_sddl(OWNER, deny_network=True))
    assert entries[0] == ["D", "", "GA", "", "", "NU"]
    assert {e[5] for e in entries if e[0] == "A"} == {"SY", OWNER}


@pytest.mark.req("R-SEC-4")
@pytest.mark.parametrize("bad", ["", "WD", "S-1-5-21-1)(A;;GA;;;WD", "S-1-5-21-1\x00"])
def test_sddl_rejects_anything_but_a_sid(bad: str) -> None:
    with pytest.raises(ValueError):
        build_sddl(bad)


@pytest.mark.req("R-SEC-4")
async def test_first_instance_is_exclusive_local_only_and_secured(api: FakeApi, accepter: FakeAccepter) -> None:
    server = await start(api, accepter)
    assert api.sddls == [build_sddl(OWNER)]
    (first,) = api.created
    assert first.name == NAME
    assert first.open_mode == PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE
    assert first.pipe_mode & PIPE_REJECT_REMOTE_CLIENTS
    assert not first.pipe_mode & (PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE)  # byte stream, like the socket
    assert first.attributes == ("SECURITY_ATTRIBUTES", build_sddl(OWNER))
    server.close()
    await server.wait_closed()


@pytest.mark.req("R-SEC-4")
async def test_every_instance_gets_the_security_attributes(api: FakeApi, accepter: FakeAccepter) -> None:
    server = await start(api, accepter)
    for _ in range(3):
        await accepter.connect()
    assert len(api.created) == 4
    assert all(c.attributes == ("SECURITY_ATTRIBUTES", build_sddl(OWNER)) for c in api.created)
    assert all(c.pipe_mode & PIPE_REJECT_REMOTE_CLIENTS for c in api.created)
    first_flags = [bool(c.open_mode & FILE_FLAG_FIRST_PIPE_INSTANCE) for c in api.created]
    assert first_flags == [True, False, False, False]
    server.close()
    await server.wait_closed()


@pytest.mark.req("R-SEC-4")
@pytest.mark.req("R-PATH-4")
async def test_name_owned_by_someone_else_is_a_clear_error(api: FakeApi, accepter: FakeAccepter) -> None:
    api.fail_create = [AccessDenied(errno.EACCES, "Access is denied")]
    with pytest.raises(PipeEndpointError) as info:
        await start(api, accepter)
    assert NAME in str(info.value) and "in use" in str(info.value)
    assert info.value.in_use and info.value.pipe_name == NAME
    assert api.freed == [("SECURITY_ATTRIBUTES", build_sddl(OWNER))]  # nothing leaks on the way out


async def test_other_first_instance_failures_name_the_pipe(api: FakeApi, accepter: FakeAccepter) -> None:
    api.fail_create = [OSError(errno.EINVAL, "The parameter is incorrect")]
    with pytest.raises(PipeEndpointError, match=re.escape(NAME)) as info:
        await start(api, accepter)
    assert not info.value.in_use


# --- the accept loop ---------------------------------------------------------------------------------------


@pytest.mark.req("R-SEC-4")
async def test_client_gets_its_own_protocol_and_a_new_instance_listens(api: FakeApi, accepter: FakeAccepter) -> None:
    factory = Factory()
    server = await start(api, accepter, factory)
    assert factory.protocols == []
    await accepter.connect()
    assert len(api.created) == 2  # the next instance is listening
    assert len(factory.protocols) == 1
    (pipe, protocol, extra) = accepter.transports[0]
    assert pipe.fileno() == api.created[0].handle and protocol is factory.protocols[0]
    assert extra == {"addr": NAME, "peer": PEER_LABEL}
    await accepter.connect()
    assert len(factory.protocols) == 2 and len(api.created) == 3
    assert api.closed == []  # connected instances belong to their transports
    server.close()
    await server.wait_closed()


async def test_close_closes_the_listening_instance_only(api: FakeApi, accepter: FakeAccepter) -> None:
    server = await start(api, accepter)
    await accepter.connect()
    server.close()
    assert api.closed == [api.created[1].handle]  # listening one; the connected one is the transport's
    assert api.freed == [("SECURITY_ATTRIBUTES", build_sddl(OWNER))]
    assert not server.is_serving()
    await server.wait_closed()
    server.close()  # idempotent
    assert api.closed == [api.created[1].handle]
    assert len(api.created) == 2 and accepter.waiting == {}


async def test_client_that_left_before_accept_is_dropped(api: FakeApi, accepter: FakeAccepter) -> None:
    factory = Factory()
    server = await start(api, accepter, factory)
    await accepter.connect(BrokenPipeError())
    await until(lambda: len(api.created) == 2, interval=0)
    assert api.closed == [api.created[0].handle] and factory.protocols == []
    await accepter.connect()
    assert len(factory.protocols) == 1
    server.close()
    await server.wait_closed()


async def test_failing_protocol_factory_drops_that_client_and_keeps_listening(
    api: FakeApi, accepter: FakeAccepter
) -> None:
    def broken() -> asyncio.Protocol:
        raise RuntimeError("boom")

    server = await serve_pipe(NAME, broken, api=api, accepter=accepter)
    await accepter.connect()
    assert api.closed == [api.created[0].handle]
    assert server.is_serving() and len(accepter.waiting) == 1
    server.close()
    await server.wait_closed()


async def test_instance_creation_failure_is_retried(
    api: FakeApi, accepter: FakeAccepter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipe_mod, "_RETRY_MIN", 0.0)
    factory = Factory()
    server = await start(api, accepter, factory)
    api.fail_create = [OSError(errno.EMFILE, "no handles"), OSError(errno.EMFILE, "no handles")]
    await accepter.connect()
    assert len(factory.protocols) == 1  # the connected client is served regardless
    await until(lambda: len(accepter.waiting) == 1, interval=0)
    assert len(api.created) == 2
    server.close()
    await server.wait_closed()


# --- platform guards ---------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="checks the non-Windows guard")
async def test_without_a_fake_api_off_windows_is_a_clear_error(accepter: FakeAccepter) -> None:
    with pytest.raises(RuntimeError, match="only on Windows"):
        await serve_pipe(NAME, Factory(), accepter=accepter)


async def test_real_accepter_needs_the_proactor_loop() -> None:
    loop = asyncio.get_running_loop()
    if hasattr(loop, "_proactor"):
        pytest.skip("running on the ProactorEventLoop")
    with pytest.raises(RuntimeError, match="ProactorEventLoop"):
        ProactorAccepter(loop)


# --- more of the accept loop and its edges -----------------------------------------------------------------


class PipeBusy(OSError):
    winerror = ERROR_PIPE_BUSY


@pytest.mark.req("R-SEC-4")
@pytest.mark.req("R-PATH-4")
async def test_a_busy_name_is_in_use_too(api: FakeApi, accepter: FakeAccepter) -> None:
    api.fail_create = [PipeBusy(errno.EBUSY, "All pipe instances are busy")]
    with pytest.raises(PipeEndpointError, match="already in use") as info:
        await start(api, accepter)
    assert info.value.in_use and api.created == [] and len(api.freed) == 1


async def test_a_failing_accept_is_retried_on_a_fresh_instance(
    api: FakeApi, accepter: FakeAccepter, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pipe_mod, "_RETRY_MIN", 0.0)
    factory = Factory()
    server = await start(api, accepter, factory)
    await accepter.connect(OSError(errno.EIO, "The semaphore timeout period has expired"))
    await until(lambda: len(accepter.waiting) == 1, interval=0)
    assert api.closed == [api.created[0].handle]  # the failed instance is closed, not leaked
    assert len(api.created) == 2 and not api.created[1].open_mode & FILE_FLAG_FIRST_PIPE_INSTANCE
    assert "cannot listen" in caplog.text and NAME in caplog.text
    await accepter.connect()
    assert len(factory.protocols) == 1
    server.close()
    await server.wait_closed()


async def test_close_cancels_the_pending_accept_and_creates_nothing_more(api: FakeApi, accepter: FakeAccepter) -> None:
    server = await start(api, accepter)
    await until(lambda: len(accepter.waiting) == 1, interval=0)
    server.close()
    await server.wait_closed()
    assert accepter.waiting == {} and len(api.created) == 1 and api.closed == [api.created[0].handle]
    assert len(api.freed) == 1


def test_pipe_handle_closes_once() -> None:
    api = FakeApi()
    handle = PipeHandle(api, 7)  # type: ignore[arg-type]  # the fake has the used surface
    assert handle.fileno() == 7 and handle.handle == 7
    handle.close()
    handle.close()
    assert api.closed == [7] and handle.fileno() == -1 and handle.handle is None


@pytest.mark.req("R-SEC-3")
def test_a_pipe_peer_is_labelled_and_has_no_uid() -> None:
    peer = pipe_peer(asyncio.BaseTransport({"addr": NAME, "peer": PEER_LABEL}))
    assert peer.label == "pipe:local" and peer.uid is None and not peer.remote


@pytest.mark.req("R-SEC-4")
def test_sddl_is_a_dacl_only_and_grants_generic_all() -> None:
    sddl = build_sddl(OWNER, deny_network=True)
    assert not re.search(r"(^|\))[OGS]:", sddl)  # no owner, group or SACL part: the creator's defaults
    assert all(e[2] == "GA" and e[3:5] == ["", ""] for e in aces(sddl))


class FakeProactor:
    def __init__(self) -> None:
        self.accepted: list[PipeHandle] = []

    async def accept_pipe(self, pipe: PipeHandle) -> PipeHandle:
        self.accepted.append(pipe)
        return pipe


class FakeProactorLoop:
    """The two private members of asyncio's ProactorEventLoop that `start_serving_pipe` (and we) use."""

    def __init__(self) -> None:
        self._proactor = FakeProactor()
        self.made: list[tuple[PipeHandle, asyncio.Protocol, dict[str, Any]]] = []

    def _make_duplex_pipe_transport(
        self, pipe: PipeHandle, protocol: asyncio.Protocol, extra: dict[str, Any]
    ) -> asyncio.BaseTransport:
        self.made.append((pipe, protocol, extra))
        return asyncio.BaseTransport(extra)


async def test_the_real_accepter_uses_the_proactor_calls_start_serving_pipe_uses() -> None:
    loop = FakeProactorLoop()
    accepter = ProactorAccepter(loop)  # type: ignore[arg-type]  # the fake has the used surface
    pipe = PipeHandle(FakeApi(), 5)  # type: ignore[arg-type]
    await accepter.accept(pipe)
    protocol = asyncio.Protocol()
    transport = accepter.make_transport(pipe, protocol, {"peer": PEER_LABEL})
    assert loop._proactor.accepted == [pipe] and loop.made == [(pipe, protocol, {"peer": PEER_LABEL})]
    assert transport.get_extra_info("peer") == PEER_LABEL


@pytest.mark.req("R-PATH-3")
def test_the_windows_endpoint_is_the_pipe_name_unless_zeroclaw_socket_says_otherwise(tmp_path: Path) -> None:
    from app.paths import resolve

    paths = resolve(str(tmp_path), env={}, windows=True)
    assert paths.endpoint == pipe_name_for(tmp_path / "data")
    assert resolve(str(tmp_path), env={"ZEROCLAW_SOCKET": r"\\.\pipe\mine"}, windows=True).endpoint == r"\\.\pipe\mine"


# --- the daemon on Windows: the pipe, the shared NDJSON protocol, shutdown ------------------------------------


class StreamAccepter(FakeAccepter):
    """Like the proactor: the connected instance gets a transport, which starts the protocol."""

    def make_transport(
        self, pipe: PipeHandle, protocol: asyncio.Protocol, extra: dict[str, Any]
    ) -> asyncio.BaseTransport:
        from test_ndjson_protocol import FakeSocket

        transport = FakeSocket()
        protocol.connection_made(transport)  # type: ignore[arg-type]  # the fake has the used surface
        self.transports.append((pipe, protocol, extra))
        self.sockets.append(transport)
        return transport  # type: ignore[return-value]

    sockets: list[Any]

    def __init__(self) -> None:
        super().__init__()
        self.sockets = []


@pytest.mark.req("R-ARCH-1")
@pytest.mark.req("R-SEC-4")
async def test_the_daemon_serves_the_pipe_with_the_socket_s_protocol(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    import orjson
    from test_connection import make_server

    from app import daemon
    from app.paths import process_uid
    from rpc.transports.stream import NdjsonProtocol

    accepter = StreamAccepter()
    monkeypatch.setattr(pipe_mod, "_default_api", lambda: api)
    monkeypatch.setattr(pipe_mod, "ProactorAccepter", lambda loop: accepter)
    server, _ = make_server()
    async with contextlib.AsyncExitStack() as cleanup:
        await daemon._listen(NAME, server, cleanup, pipe=True)
        assert api.created[0].open_mode & FILE_FLAG_FIRST_PIPE_INSTANCE and api.sddls == [build_sddl(OWNER)]
        await accepter.connect()
        (_pipe, protocol, extra) = accepter.transports[0]
        assert type(protocol) is NdjsonProtocol and extra == {"addr": NAME, "peer": PEER_LABEL}
        sock = accepter.sockets[0]
        protocol.data_received(b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}\n')
        await until(lambda: bool(sock.writes), interval=0)
        (reply,) = [orjson.loads(line) for line in b"".join(sock.writes).splitlines()]
        assert reply["id"] == 1 and "result" in reply
        (conn,) = server.connections
        assert conn.peer.label == PEER_LABEL
        # No uid from the OS: the owner, as the DACL admits only this user (and SYSTEM).
        assert conn.authority.credential == ("uid", process_uid()) and process_uid() == os.getuid()
    # Shut down: the listening instance is closed, the security attributes freed, the client's connection closed.
    assert api.created[1].handle in api.closed and len(api.freed) == 1
    assert sock.closed


async def test_the_daemon_says_in_one_line_when_the_pipe_is_taken(
    api: FakeApi, accepter: FakeAccepter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from test_connection import make_server

    from app import daemon

    monkeypatch.setattr(pipe_mod, "_default_api", lambda: api)
    monkeypatch.setattr(pipe_mod, "ProactorAccepter", lambda loop: accepter)
    api.fail_create = [AccessDenied(errno.EACCES, "Access is denied")]
    server, _ = make_server()
    async with contextlib.AsyncExitStack() as cleanup:
        with pytest.raises(daemon.StartupError, match=re.escape(f"named pipe {NAME} is already in use")):
            await daemon._listen(NAME, server, cleanup, pipe=True)


def test_the_daemon_does_not_import_the_pipe_modules_off_windows() -> None:
    import subprocess

    code = (
        "import sys, app.daemon, app.cli, rpc.client\n"
        "assert not [m for m in sys.modules if m in ('rpc.transports.pipe', 'rpc.transports.win_security')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
