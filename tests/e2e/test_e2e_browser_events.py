"""A browser's own `EventSource` follows a session's updates (R-ECO-2, R-ECO-4), in real headless Chromium.

The page reaches the gateway through a TCP relay written here, which the test cuts in the middle of a `/sleep`
turn: Chromium then reconnects by itself, sending `Last-Event-ID`, and the updates it collects are every update of
the turn, once each and in order — the daemon replayed what the cut lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from e2e_harness import DaemonFactory
from playwright.async_api import Browser
from session_client import Peer
from test_e2e_panel import (
    browser,  # noqa: F401 (a fixture)
    chromium_installed,  # noqa: F401 (a fixture)
    open_panel,
    pair,
    start_daemon,
)
from waiting import until

FOLLOW = """([sid, token]) => {
    window.seen = [];
    window.opens = 0;
    const source = new EventSource(`/api/sessions/${sid}/events?token=${token}`);
    source.onopen = () => { window.opens += 1; };
    source.onmessage = (e) => window.seen.push({ id: e.lastEventId, update: JSON.parse(e.data) });
    source.addEventListener("gap", () => window.seen.push({ gap: true }));
    window.source = source;
}"""


class Relay:
    """127.0.0.1:<port> → the gateway, byte for byte; `cut()` drops every connection open now."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.connections: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.connections |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self.connections -= {writer, up_writer}

    def cut(self) -> None:
        for writer in list(self.connections):
            writer.transport.abort()


@contextlib.asynccontextmanager
async def relay_to(url: str) -> AsyncIterator[Relay]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    relay = Relay((parts.hostname, parts.port))
    relay.server = await asyncio.start_server(relay._serve, "127.0.0.1", 0)
    try:
        yield relay
    finally:
        relay.cut()
        relay.server.close()


@pytest.mark.req("R-ECO-2")
@pytest.mark.req("R-ECO-4")
async def test_a_browser_event_source_resumes_with_last_event_id_and_loses_nothing(
    daemon_factory: DaemonFactory,
    browser: Browser,  # noqa: F811
) -> None:
    d, url = start_daemon(daemon_factory)
    token = await pair(d)
    async with relay_to(url) as relay, await Peer.open(d, token=token) as owner:
        sid = (await owner.call("session/new", {}))["sessionId"]
        watched = await open_panel(browser, relay.url)
        page = watched.page
        await page.evaluate(FOLLOW, [sid, token])
        await until(lambda: page.evaluate("window.opens"), 10)  # following before the turn starts

        async def seen() -> list[dict[str, Any]]:
            got: list[dict[str, Any]] = await page.evaluate("window.seen")
            return got

        mark, answer = await owner.start_prompt(sid, "/sleep 4")  # a "." every 0.1 s
        await until(lambda: _count_at_least(seen, 5), 10)
        relay.cut()  # mid-turn: the browser reconnects by itself with Last-Event-ID
        turn = await owner.finish_turn(sid, mark, answer)
        await until(lambda: _has_turn_complete(seen), 20)
        got = await seen()
        assert await page.evaluate("window.opens") == 2  # it did reconnect, not just keep one connection
        await page.evaluate("window.source.close()")
        assert not watched.page_errors, watched.page_errors
    assert not any(e.get("gap") for e in got), got
    assert [e["update"] for e in got] == turn.updates  # every update of the turn, once each, in order
    assert [int(e["id"]) for e in got] == [u["seq"] for u in turn.updates]


async def _count_at_least(seen: Any, n: int) -> bool:
    return len(await seen()) >= n


async def _has_turn_complete(seen: Any) -> bool:
    return any(e.get("update", {}).get("type") == "turn_complete" for e in await seen())
