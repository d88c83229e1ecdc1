"""A closed Unix-socket connection is freed by reference counting alone, not by the cyclic GC (R-LIM; docs/limits.md
"Garbage"): its protocol, connection, call context and flow control no longer hold each other once it ends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from gc_probe import cyclic_garbage
from test_connection import make_server
from waiting import until

from rpc.transports.stream import NdjsonProtocol
from rpc.transports.unix import peer_of, serve_unix

OURS = {"Connection", "CallContext", "Authority", "NdjsonProtocol", "FlowControl", "LineSplitter"}


async def _one_client(path: Path) -> None:
    reader, writer = await asyncio.open_unix_connection(str(path))
    for rid, method, params in ((1, "initialize", {"protocolVersion": 1}), (2, "status", None)):
        frame = {"jsonrpc": "2.0", "id": rid, "method": method} | ({"params": params} if params else {})
        writer.write(orjson.dumps(frame) + b"\n")
        assert orjson.loads(await reader.readline())["id"] == rid
    writer.close()
    await writer.wait_closed()


@pytest.mark.req("R-LIM")
async def test_closed_unix_connections_leave_no_cyclic_garbage(tmp_path: Path) -> None:
    server, _ = make_server()
    path = tmp_path / "d.sock"
    listener = await serve_unix(path, lambda: NdjsonProtocol(server, peer_of))
    try:
        with cyclic_garbage() as garbage:
            for _ in range(5):
                await _one_client(path)
            # the daemon's side sees the close a moment after the client's
            await until(lambda: not server.connections, 2)
        assert not OURS & set(garbage), garbage
    finally:
        listener.server.close()
        await listener.server.wait_closed()
