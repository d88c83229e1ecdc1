"""The two ways to reach a daemon: its local endpoint (a Unix socket, NDJSON: one JSON message per line) and the
gateway's WebSocket `/rpc` (one message per text frame; needs the `websockets` package: the `[websocket]` extra)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

__all__ = ["UnixChannel", "WebSocketChannel", "default_socket"]

_LINE_LIMIT = 64 * 1024 * 1024  # above any frame the daemon sends ([limits] in its config)


def default_socket() -> Path:
    """Where a daemon listens by default: $ZEROCLAW_SOCKET, else <config dir>/data/daemon.sock."""
    if os.environ.get("ZEROCLAW_SOCKET"):
        return Path(os.environ["ZEROCLAW_SOCKET"])
    config = os.environ.get("ZEROCLAW_CONFIG_DIR")
    if config:
        return Path(config).expanduser() / "data" / "daemon.sock"
    data = os.environ.get("ZEROCLAW_DATA_DIR")
    return Path(data).expanduser() / "daemon.sock" if data else Path.home() / ".zeroclaw" / "data" / "daemon.sock"


class UnixChannel:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._writing = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | os.PathLike[str]) -> UnixChannel:
        reader, writer = await asyncio.open_unix_connection(os.fspath(path), limit=_LINE_LIMIT)
        return cls(reader, writer)

    async def send(self, text: str) -> None:
        async with self._writing:
            self._writer.write(text.encode() + b"\n")
            await self._writer.drain()

    async def receive(self) -> str | None:
        line = await self._reader.readline()
        return line.decode() if line else None

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


class WebSocketChannel:
    def __init__(self, socket: Any) -> None:
        self._socket = socket

    @classmethod
    async def open(cls, url: str) -> WebSocketChannel:
        from websockets.asyncio.client import connect  # the `[websocket]` extra

        return cls(await connect(url, max_size=None, proxy=None))

    async def send(self, text: str) -> None:
        await self._socket.send(text)

    async def receive(self) -> str | None:
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self._socket.recv()
        except ConnectionClosed:
            return None
        return message if isinstance(message, str) else message.decode()

    async def close(self) -> None:
        await self._socket.close()
