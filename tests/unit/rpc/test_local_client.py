"""The clients' side of the local endpoint (rpc/client.py): the Unix socket here, the named pipe on Windows, where
the Proactor loop's `create_pipe_connection` is played by a fake over a socket pair."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from waiting import until

from app.cli.terminal import CliError
from rpc.client import Client, open_endpoint, open_pipe

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fakes the pipe over a Unix socket pair")

PIPE = r"\\.\pipe\zeroclaw-0123456789abcdef"


class FakePipes:
    """`loop.create_pipe_connection` as the Proactor loop has it: (protocol_factory, address) -> (transport,
    protocol). Each connection is one end of a socket pair; the test plays the daemon on the other end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, error: OSError | None = None) -> None:
        self.loop = loop
        self.error = error
        self.names: list[str] = []
        self.daemon_ends: list[socket.socket] = []

    async def __call__(
        self, protocol_factory: Callable[[], asyncio.Protocol], address: str
    ) -> tuple[asyncio.BaseTransport, asyncio.Protocol]:
        self.names.append(address)
        if self.error is not None:
            raise self.error
        ours, theirs = socket.socketpair()
        self.daemon_ends.append(theirs)
        return await self.loop.create_connection(protocol_factory, sock=ours)


def install(monkeypatch: pytest.MonkeyPatch, error: OSError | None = None) -> FakePipes:
    loop = asyncio.get_running_loop()
    pipes = FakePipes(loop, error)
    monkeypatch.setattr(loop, "create_pipe_connection", pipes, raising=False)
    return pipes


async def answer_one(daemon_end: socket.socket) -> dict[str, Any]:
    """Read one request on the daemon's end and answer it with its own method name."""
    reader, writer = await asyncio.open_connection(sock=daemon_end)
    request = orjson.loads(await reader.readline())
    writer.write(orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": request["method"]}) + b"\n")
    await writer.drain()
    writer.close()
    return dict(request)


async def test_open_pipe_gives_streams_a_client_talks_over(monkeypatch: pytest.MonkeyPatch) -> None:
    pipes = install(monkeypatch)
    reader, writer = await open_pipe(PIPE)
    assert pipes.names == [PIPE]
    client = Client(reader, writer)
    served = asyncio.ensure_future(answer_one(pipes.daemon_ends[0]))
    assert await client.call("status") == "status"
    assert (await served)["method"] == "status"
    await client.close()


async def test_open_pipe_keeps_the_client_s_read_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch)
    reader, writer = await open_pipe(PIPE, limit=1234)
    assert reader._limit == 1234  # type: ignore[attr-defined]  # what open_unix_connection(limit=) sets too
    writer.close()


async def test_on_windows_the_endpoint_is_opened_as_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    pipes = install(monkeypatch)
    real_platform = sys.platform
    monkeypatch.setattr(sys, "platform", "win32")
    try:
        _reader, writer = await open_endpoint(PIPE)
    finally:
        monkeypatch.setattr(sys, "platform", real_platform)
    assert pipes.names == [PIPE]
    writer.close()


async def test_elsewhere_the_endpoint_is_the_unix_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipes = install(monkeypatch)
    path = tmp_path / "daemon.sock"
    got: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.readline())
        writer.close()

    server = await asyncio.start_unix_server(serve, path)
    async with server:
        _reader, writer = await open_endpoint(str(path))
        writer.write(b"{}\n")
        await writer.drain()
        await until(lambda: got, 1)
        writer.close()
    assert got == [b"{}\n"] and pipes.names == []


async def test_a_loop_without_pipes_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="ProactorEventLoop"):
        await open_pipe(PIPE)


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (FileNotFoundError(2, "The system cannot find the file specified"), "no daemon is answering at"),
        (PermissionError(13, "Access is denied"), "the daemon runs as another user"),
    ],
)
async def test_the_cli_on_windows_names_the_pipe_when_it_cannot_connect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, says: str
) -> None:
    from app.cli.rpc_command import connect
    from app.paths import pipe_name

    pipes = install(monkeypatch, error)
    monkeypatch.delenv("ZEROCLAW_SOCKET", raising=False)
    real_platform = sys.platform
    monkeypatch.setattr(sys, "platform", "win32")
    try:
        with pytest.raises(CliError) as info:
            await connect(str(tmp_path))
    finally:
        monkeypatch.setattr(sys, "platform", real_platform)
    expected = pipe_name(tmp_path / "data")
    assert pipes.names == [expected]
    assert says in str(info.value) and expected in str(info.value)
