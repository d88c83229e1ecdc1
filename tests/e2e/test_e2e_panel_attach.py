"""The panel follows sessions (R-MULTI-2, R-MULTI-3) in real headless Chromium against a real daemon.

Two tabs on one session both stream a turn prompted in one of them; a WebSocket broken mid-turn reconnects by
itself and the replay by `seq` fills the hole (every chunk exactly once); an approval shown in two tabs and
answered in one disappears from the other; an approval asked before a tab opened the session is shown from the
attach result; a late answer is told it came late. Set-up (daemon, token, Chromium) is test_e2e_panel's.

The tabs' sockets go through Playwright's WebSocket routing (`Tap`): the frames from the daemon are recorded, some
can be held back, and a socket can be broken like a network drop.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory
from playwright.async_api import Browser, BrowserContext, Page, WebSocketRoute, expect
from test_e2e_panel import (
    CONFIG,
    WAIT_MS,
    browser,  # noqa: F401 - a fixture
    chromium_installed,  # noqa: F401 - an autouse fixture
    new_session,
    pair,
    send,
    sign_in,
    start_daemon,
    transcript,
)
from waiting import until

pytestmark = pytest.mark.skipif(not hasattr(Page, "route_web_socket"), reason="Playwright without WebSocket routing")

SLEPT = re.compile(r"^Sleeping for (\d+) s\.+ Done\.$")  # /sleep's whole text: how many dots depends on timing


@pytest.fixture(scope="module")
def attach_daemon() -> Iterator[tuple[Daemon, str, str]]:
    factory = DaemonFactory()
    try:
        d, url = start_daemon(factory)
        yield d, url, asyncio.run(pair(d))
    finally:
        factory.close()


class Tap:
    """A page's `/rpc` WebSockets, routed through Playwright: what the daemon sent is recorded; frames `hold`
    matches are not delivered; `drop()` breaks the newest socket like a network failure (both ends close); while
    `offline`, a new socket is closed at once, as if the daemon could not be reached; frames `twice` matches are
    delivered twice; requests `slow` gives a delay reach the daemon that much later."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.routes: list[tuple[WebSocketRoute, WebSocketRoute]] = []
        self.frames: list[dict[str, Any]] = []
        self.hold: Callable[[dict[str, Any]], bool] = lambda frame: False
        self.twice: Callable[[dict[str, Any]], bool] = lambda frame: False
        self.slow: Callable[[dict[str, Any]], float] = lambda frame: 0.0  # seconds a page's request is held
        self.offline = False
        self.refused = 0

    async def install(self) -> None:
        await self.page.route_web_socket(re.compile(r"/rpc$"), self._route)

    async def _route(self, ws: WebSocketRoute) -> None:
        if self.offline:
            self.refused += 1
            await ws.close(code=4001, reason="offline")
            return
        server = ws.connect_to_server()

        def from_daemon(message: str | bytes) -> None:
            frame = json.loads(message)
            self.frames.append(frame)
            if not self.hold(frame):
                ws.send(message)
                if self.twice(frame):
                    ws.send(message)

        def from_page(message: str | bytes) -> None:
            delay = self.slow(json.loads(message))
            if delay:
                asyncio.get_running_loop().call_later(delay, server.send, message)
            else:
                server.send(message)

        server.on_message(from_daemon)
        ws.on_message(from_page)
        self.routes.append((ws, server))

    async def drop(self) -> None:
        ws, server = self.routes[-1]
        await server.close(code=1001, reason="network drop")
        await ws.close(code=4000, reason="network drop")

    def results(self, key: str) -> list[dict[str, Any]]:
        """The results the daemon answered that have `key` (e.g. `replayed`: session/attach answers)."""
        return [f["result"] for f in self.frames if isinstance(f.get("result"), dict) and key in f["result"]]


class Tab:
    def __init__(self, page: Page, tap: Tap) -> None:
        self.page = page
        self.tap = tap
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def assert_clean(self) -> None:
        assert not self.errors, self.errors


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:  # noqa: F811 - the imported fixture
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield ctx
    finally:
        await ctx.close()


async def open_tab(context: BrowserContext, url: str, token: str) -> Tab:
    """A tab of one browser window, signed in (each tab keeps its own token in sessionStorage)."""
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    tap = Tap(page)
    await tap.install()
    await page.goto(url + "/", wait_until="load")
    await sign_in(page, token)
    return Tab(page, tap)


async def open_listed(page: Page, sid: str) -> None:
    """Open a session from the list (refreshing it first: it may have been started in another tab)."""
    await page.click("#refresh-sessions")
    await page.locator(f'#session-list li[data-session-id="{sid}"] button').click()
    await expect(page.locator("#chat-title")).to_have_text(sid)


async def stored_reply(d: Daemon, sid: str) -> str:
    """The last assistant message of the session's stored transcript."""
    async with await d.client() as c:
        rows = (await c.call("session/messages", {"sessionId": sid, "limit": 50}))["messages"]
    return str([r for r in rows if r["role"] == "assistant"][-1]["content"])


async def stored_markers(d: Daemon, sid: str) -> int:
    """How many `interrupted` markers the session's stored transcript holds."""
    async with await d.client() as c:
        rows = (await c.call("session/messages", {"sessionId": sid, "limit": 1000}))["messages"]
    return sum(1 for r in rows if r.get("marker") == "interrupted")


async def listed_with(page: Page, sid: str, messages: int) -> None:
    """The list shows the session with `messages` messages: the refresh after its turn is over (a call still out
    when the connection drops fails, and is shown as such)."""
    item = page.locator(f'#session-list li[data-session-id="{sid}"] .session-sub')
    await expect(item).to_contain_text(f" {messages} msg ")


async def panel_errors(page: Page) -> list[str]:
    return await page.locator("#errors .error-message").all_text_contents()


# ------------------------------------------------------------------------------------------------ two tabs


@pytest.mark.req("R-MULTI-2")
async def test_two_tabs_on_one_session_both_stream(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    d, url, token = attach_daemon
    a = await open_tab(context, url, token)
    sid = await new_session(a.page)
    b = await open_tab(context, url, token)
    await open_listed(b.page, sid)

    await send(a.page, "/sleep 2")
    # B streams while the turn still runs (A's Cancel is enabled), not only once it ended
    b_text = transcript(b.page).locator(".bubble.assistant .text")
    await expect(b_text).to_contain_text(re.compile(r"Sleeping for 2 s\.\."))
    await expect(a.page.locator("#cancel")).to_be_enabled()
    await expect(b.page.locator("#send")).to_be_disabled()  # B knows a turn runs
    await expect(transcript(b.page).locator(".bubble.user .text")).to_have_text(["/sleep 2"])  # its prompt too

    a_text = transcript(a.page).locator(".bubble.assistant .text")
    await expect(a_text).to_have_text(SLEPT)
    await expect(b_text).to_have_text(SLEPT)
    final = await stored_reply(d, sid)
    assert await a_text.text_content() == final
    assert await b_text.text_content() == final  # every chunk once, in both
    await expect(b.page.locator("#send")).to_be_enabled()

    # and the other way round: a prompt from B streams into A
    await send(b.page, "hello from tab B")
    await expect(transcript(a.page).locator(".bubble.assistant .text").last).to_contain_text("hello from tab B")
    await expect(transcript(b.page).locator(".bubble.assistant .text").last).to_contain_text("hello from tab B")
    assert await transcript(a.page).locator(".bubble.assistant").count() == 2
    assert await transcript(b.page).locator(".bubble.assistant").count() == 2
    await expect(transcript(a.page).locator(".bubble.user .text")).to_have_text(["/sleep 2", "hello from tab B"])

    # a turn prompted in A is cancelled from B (R-MULTI-3: any attached connection of the owner)
    await send(a.page, "/sleep 20")
    await expect(transcript(b.page).locator(".bubble.assistant .text").last).to_contain_text("Sleeping for 20 s")
    await b.page.click("#cancel")
    for tab in (a, b):
        await expect(transcript(tab.page).locator(".stop[data-stop-reason=cancelled]")).to_have_count(1)
        await expect(tab.page.locator("#send")).to_be_enabled()
    for tab in (a, b):
        assert await panel_errors(tab.page) == []
        tab.assert_clean()


@pytest.mark.req("R-MULTI-2")
async def test_a_closed_session_brought_back_is_followed(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    """Tabs showing a closed session only read it; once a prompt brings it back to life, each follows it."""
    d, url, token = attach_daemon
    async with await d.client() as c:
        sid = (await c.call("session/new"))["sessionId"]
        await c.call("session/prompt", {"sessionId": sid, "prompt": "before closing"})
        await c.call("session/close", {"sessionId": sid})
    a = await open_tab(context, url, token)
    b = await open_tab(context, url, token)
    for tab in (a, b):
        await open_listed(tab.page, sid)
        await expect(tab.page.locator("#chat-state")).to_have_text("closed")
        assert tab.tap.results("replayed") == []  # read, not attached (that would bring it back)
    await send(a.page, "wake up")  # an ACP session is rehydrated by a prompt
    await expect(transcript(a.page).locator(".bubble.assistant .text").last).to_contain_text("wake up")
    await expect(a.page.locator("#chat-state")).to_have_text("live")
    await b.page.click("#refresh-sessions")
    await expect(b.page.locator("#chat-state")).to_have_text("live")
    await send(a.page, "/sleep 1")
    await expect(transcript(b.page).locator(".bubble.assistant .text").last).to_have_text(SLEPT)
    assert await transcript(b.page).locator(".bubble.assistant .text").last.text_content() == await stored_reply(d, sid)
    assert b.tap.results("replayed"), "B never attached"
    await expect(transcript(b.page).locator(".bubble.user .text")).to_have_text(
        ["before closing", "wake up", "/sleep 1"]
    )
    for tab in (a, b):
        assert await panel_errors(tab.page) == []
        tab.assert_clean()


@pytest.mark.req("R-MULTI-2")
@pytest.mark.parametrize("prompt", ["/sleep 2", "quick"])
async def test_a_turn_begun_while_the_transcript_is_read(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext, prompt: str
) -> None:
    """A turn starts (and, `quick`, ends) between the attach answer and the transcript read, which then holds part
    or all of it: the tab still shows it once, from its prompt."""
    d, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    async with await d.client() as c:
        sid = (await c.call("session/new"))["sessionId"]
        await c.call("session/prompt", {"sessionId": sid, "prompt": "earlier"})
        tab.tap.slow = lambda f: 1.5 if f.get("method") == "session/messages" else 0.0
        await page.click("#refresh-sessions")
        await page.locator(f'#session-list li[data-session-id="{sid}"] button').click()
        # attached: the transcript request is on its slow way
        await until(lambda: any(r.get("sessionId") == sid for r in tab.tap.results("pendingApprovals")), what="attach")
        await c.send(
            {"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": sid, "prompt": prompt}}
        )
        while (await c.recv(timeout=10)).get("id") != "p":
            pass
    tab.tap.slow = lambda f: 0.0
    final = await stored_reply(d, sid)
    texts = transcript(page).locator(".bubble.assistant .text")
    await expect(texts.last).to_have_text(final)  # once the tab has read the transcript again
    await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["earlier", prompt])
    await expect(texts).to_have_count(2)
    await expect(page.locator("#send")).to_be_enabled()
    assert await panel_errors(page) == []
    tab.assert_clean()


@pytest.mark.req("R-MULTI-2")
async def test_a_tab_opened_mid_turn_joins_it(attach_daemon: tuple[Daemon, str, str], context: BrowserContext) -> None:
    """A session whose turn (prompted by another client) already runs: the tab shows that turn from its first
    update (replayed: `afterSeq:0`), its prompt included, then live to its end, as stored."""
    d, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    async with await d.client() as c:
        sid = (await c.call("session/new"))["sessionId"]
        prompt = {"sessionId": sid, "prompt": "/sleep 4"}  # long enough to open the tab on a loaded machine
        await c.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": prompt})
        while (await c.recv(timeout=5)).get("params", {}).get("type") != "agent_message_chunk":
            pass  # it runs
        await open_listed(page, sid)
        text = transcript(page).locator(".bubble.assistant .text")
        await expect(text).to_have_text(re.compile(r"^Sleeping for 4 s\.*$"))  # from its start, while it runs
        await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["/sleep 4"])
        await expect(page.locator("#cancel")).to_be_enabled()  # this tab may cancel it, or wait
        await expect(page.locator("#send")).to_be_disabled()
        while (await c.recv(timeout=10)).get("id") != "p":  # the turn's answer, to the client that prompted
            pass
    await expect(text).to_have_count(1)
    await expect(text).to_have_text(SLEPT)
    assert await text.text_content() == await stored_reply(d, sid)
    await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["/sleep 4"])
    await expect(page.locator("#send")).to_be_enabled()
    assert await panel_errors(page) == []
    tab.assert_clean()


@pytest.mark.req("R-MULTI-2")
async def test_a_tab_opened_mid_turn_after_a_crash_joins_it_from_its_start(
    daemon_factory: DaemonFactory,
    browser: Browser,  # noqa: F811
) -> None:
    """issue 38 §5.4: a SIGKILL makes the session's numbering jump at the restart, so `afterSeq:0` would be a gap;
    the tab replays from the attach result's `turnStartSeq` and shows the running turn from its first update."""
    first, _ = start_daemon(daemon_factory)
    token = await pair(first)
    async with await first.client() as c:
        sid = (await c.call("session/new"))["sessionId"]
        await c.call("session/prompt", {"sessionId": sid, "prompt": "before the crash"})
    first.send_signal(signal.SIGKILL)
    first.wait_exit()
    d, url = start_daemon(daemon_factory, config=None, config_dir=first.config_dir, root=first.root)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    tab = await open_tab(context, url, token)
    page = tab.page
    async with await d.client() as c:
        prompt = {"sessionId": sid, "prompt": "/sleep 3"}
        await c.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": prompt})
        while (await c.recv(timeout=5)).get("params", {}).get("type") != "agent_message_chunk":
            pass  # it runs
        await open_listed(page, sid)
        text = transcript(page).locator(".bubble.assistant .text")
        await expect(text.last).to_have_text(re.compile(r"^Sleeping for 3 s\.*$"))
        attached = tab.tap.results("replayed")
        assert [r["gap"] for r in attached] == [False, False], attached  # the second from turnStartSeq
        assert attached[1]["replayed"] >= 1 and attached[0]["turnStartSeq"] == attached[1]["turnStartSeq"]
        while (await c.recv(timeout=10)).get("id") != "p":
            pass
    await expect(text).to_have_count(2)
    await expect(text.last).to_have_text(SLEPT)
    assert await text.last.text_content() == await stored_reply(d, sid)
    await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["before the crash", "/sleep 3"])
    await expect(transcript(page)).not_to_contain_text("its output continues here")
    assert await panel_errors(page) == []
    tab.assert_clean()
    await context.close()


@pytest.mark.req("R-MULTI-2")
async def test_an_update_shown_already_is_dropped(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    """Every update reaches the page twice (as a replay racing live ones could): each is shown once, by its seq."""
    d, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    sid = await new_session(page)
    tab.tap.twice = lambda frame: frame.get("method") == "session/update"
    await send(page, "/bash echo twice")
    box = transcript(page).locator(".approval")
    await expect(box).to_have_count(1)
    await box.locator("button[data-decision=allow_once]").click()
    text = transcript(page).locator(".bubble.assistant .text")
    await expect(text).to_contain_text("Command output")
    assert await text.text_content() == await stored_reply(d, sid)
    await expect(transcript(page).locator("details.tool")).to_have_count(1)
    await expect(transcript(page).locator(".tool-output")).to_have_text("twice\n[exit code 0]")
    await send(page, "/sleep 1")
    await expect(text.last).to_have_text(SLEPT)
    assert await text.last.text_content() == await stored_reply(d, sid)
    assert await panel_errors(page) == []
    tab.assert_clean()


# ------------------------------------------------------------------------------------------------ network drop


@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-MULTI-3")
async def test_a_dropped_connection_resumes_the_turn_by_seq(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    d, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    sid = await new_session(page)
    await send(page, "/sleep 3")
    text = transcript(page).locator(".bubble.assistant .text")
    await expect(text).to_contain_text(re.compile(r"Sleeping for 3 s\.\.\."))

    await tab.tap.drop()
    await expect(page.locator("#conn-banner")).to_be_visible()
    await expect(page.locator("#conn-banner-text")).to_contain_text("4000")
    await expect(page.locator("#composer-note")).to_contain_text("If the daemon still runs, so does the turn")
    # it reconnects by itself (after 1 s) and attaches again after the last seq shown
    await expect(page.locator("#conn-banner")).to_be_hidden()
    await expect(text).to_have_text(SLEPT)
    final = await stored_reply(d, sid)
    assert await text.text_content() == final  # every chunk exactly once, none lost in the drop
    assert await transcript(page).locator(".bubble.assistant").count() == 1
    assert await transcript(page).locator(".stop").count() == 0  # the turn was not failed
    await expect(page.locator("#send")).to_be_enabled()

    attached = tab.tap.results("replayed")
    assert len(attached) == 1, attached
    assert attached[0]["sessionId"] == sid and attached[0]["gap"] is False
    assert attached[0]["replayed"] >= 1, attached  # the dots sent while the socket was down came as a replay
    seqs = [f["params"]["seq"] for f in tab.tap.frames if f.get("method") == "session/update"]
    assert sorted(set(seqs)) == list(range(1, max(seqs) + 1)), seqs  # nothing lost on the wire either
    assert await panel_errors(page) == []
    tab.assert_clean()


async def away(tab: Tab, while_away: Callable[[], Any]) -> None:
    """Break the tab's connection, keep it offline while `while_away()` runs, then let it reconnect by itself."""
    tab.tap.offline = True
    await tab.tap.drop()
    await expect(tab.page.locator("#conn-banner")).to_be_visible()
    await while_away()
    await expect(tab.page.locator("#conn-banner-text")).to_contain_text("trying again")  # a retry was refused
    tab.tap.offline = False
    await expect(tab.page.locator("#conn-banner")).to_be_hidden(timeout=WAIT_MS)
    assert tab.tap.refused >= 1


@pytest.mark.req("R-MULTI-2")
async def test_a_session_reopened_after_a_drop_while_another_was_shown(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    """A followed session that is not on screen resumes too, and shows the turn prompted elsewhere meanwhile."""
    d, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    first = await new_session(page)
    await send(page, "before the drop")
    await expect(transcript(page).locator(".bubble.assistant .text")).to_contain_text("before the drop")
    await listed_with(page, first, 2)
    await new_session(page)  # the first one is followed off screen

    async def prompt_elsewhere() -> None:  # a turn in the first session from another client
        async with await d.client() as c:
            await c.call("session/prompt", {"sessionId": first, "prompt": "while you were away"})

    await away(tab, prompt_elsewhere)
    await open_listed(page, first)
    texts = transcript(page).locator(".bubble.assistant .text")
    await expect(texts).to_have_count(2)
    await expect(texts.last).to_contain_text("while you were away")
    resumed = [r for r in tab.tap.results("replayed") if r["sessionId"] == first]
    assert resumed and resumed[-1]["replayed"] >= 2 and resumed[-1]["gap"] is False, resumed
    assert await panel_errors(page) == []
    tab.assert_clean()


@pytest.mark.req("R-ACP-5")
@pytest.mark.req("R-MULTI-3")
async def test_a_daemon_killed_mid_turn_the_open_tab_shows_the_interruption_once_reconnected(
    daemon_factory: DaemonFactory,
    browser: Browser,  # noqa: F811
) -> None:
    """issue 38 §5.7: the note said "the turn goes on in the daemon" though the daemon may be gone; after a
    restart the open tab lacked the `interrupted` marker until the session was reopened."""
    first, url = start_daemon(daemon_factory)
    token = await pair(first)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    tab = await open_tab(context, url, token)
    page = tab.page
    sid = await new_session(page)
    await send(page, "/sleep 30")
    await expect(transcript(page).locator(".bubble.assistant .text").last).to_contain_text("Sleeping for 30 s..")
    first.send_signal(signal.SIGKILL)
    first.wait_exit()
    await expect(page.locator("#conn-banner")).to_be_visible()
    note = page.locator("#composer-note")
    await expect(note).to_contain_text("If the daemon still runs, so does the turn")
    await expect(note).to_contain_text("if the daemon stopped, the turn was interrupted")
    port = url.rsplit(":", 1)[1]
    second = daemon_factory.start(
        config_dir=first.config_dir, root=first.root, no_gateway=False, args=["--gateway-port", port]
    )
    await expect(page.locator("#conn-banner")).to_be_hidden(timeout=WAIT_MS * 2)  # it reconnected by itself
    marker = transcript(page).locator(".marker[data-marker=interrupted]")
    await expect(marker).to_have_count(1)  # in the open tab, without reopening the session
    await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["/sleep 30"])
    await expect(page.locator("#send")).to_be_enabled()
    await expect(note).not_to_contain_text("Disconnected")
    assert await panel_errors(page) == []
    assert await stored_markers(second, sid) == 1  # the recovery ran once
    tab.assert_clean()
    await context.close()


@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-BRANCH-5")
@pytest.mark.parametrize(
    "held", ["messages", "total", "sessions"], ids=["prompt numbering", "session usage", "session list"]
)
async def test_a_background_read_cut_by_a_drop_is_not_an_error(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext, held: str
) -> None:
    """Regression: a read a finished turn makes (the numbering that gives its prompt a "Branch from here" button,
    the session's usage, the session list) was still out when the connection dropped, and the panel showed e.g.
    "Read transcript: Connection to the daemon closed" though the user had asked for nothing. Now it is dropped
    quietly; what is read after reconnecting shows the same."""
    _, url, token = attach_daemon
    tab = await open_tab(context, url, token)
    page = tab.page
    sid = await new_session(page)
    before = len(tab.tap.results(held))
    tab.tap.hold = lambda frame: held in (frame.get("result") or {})  # that read's answer never arrives
    await send(page, "numbered later")
    await until(lambda: len(tab.tap.results(held)) > before, 10)  # it was asked, and answered, but held
    tab.tap.hold = lambda frame: False

    async def nothing() -> None:
        pass

    await away(tab, nothing)
    await expect(transcript(page).locator(".bubble.user .branch")).to_have_count(1)  # numbered by the reload
    await listed_with(page, sid, 2)
    assert await panel_errors(page) == []


@pytest.mark.req("R-MULTI-2")
async def test_a_gap_reloads_the_transcript(daemon_factory: DaemonFactory, browser: Browser) -> None:  # noqa: F811
    """More updates than the daemon keeps went by while the tab was away: `gap`, so it reads the transcript."""
    d, url = start_daemon(daemon_factory, config=CONFIG + "\n[limits]\nreplay_events = 5\n")
    token = await pair(d)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    tab = await open_tab(context, url, token)
    page = tab.page
    sid = await new_session(page)
    await send(page, "first words")
    await expect(transcript(page).locator(".bubble.assistant .text")).to_contain_text("first words")
    await listed_with(page, sid, 2)

    async def stream_elsewhere() -> None:
        async with await d.client() as c:
            await c.call("session/prompt", {"sessionId": sid, "prompt": "/stream 40"})

    await away(tab, stream_elsewhere)
    texts = transcript(page).locator(".bubble.assistant .text")
    await expect(texts).to_have_count(2)
    assert await texts.last.text_content() == await stored_reply(d, sid)  # the whole turn, once
    await expect(transcript(page).locator(".bubble.user .text")).to_have_text(["first words", "/stream 40"])
    resumed = tab.tap.results("replayed")[-1]
    assert resumed["gap"] is True and resumed["replayed"] == 0, resumed
    assert await panel_errors(page) == []
    tab.assert_clean()

    # a tab opened while a turn runs whose start is no longer kept: the transcript so far (the daemon's
    # checkpoint), then live; once the turn ends, the transcript as stored
    async with await d.client() as c:
        prompt = {"sessionId": sid, "prompt": "/sleep 3"}
        await c.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": prompt})
        for _ in range(10):  # more updates than the 5 kept
            while (await c.recv(timeout=5)).get("params", {}).get("type") != "agent_message_chunk":
                pass
        late = await open_tab(context, url, token)
        await open_listed(late.page, sid)
        await expect(transcript(late.page)).to_contain_text("A turn is running; its output continues here")
        await expect(late.page.locator("#cancel")).to_be_enabled()
        while (await c.recv(timeout=10)).get("id") != "p":
            pass
    texts = transcript(late.page).locator(".bubble.assistant .text")
    await expect(texts).to_have_count(3)
    await expect(texts.last).to_have_text(SLEPT)
    assert await texts.last.text_content() == await stored_reply(d, sid)
    assert [r["gap"] for r in late.tap.results("replayed")] == [False, True]  # from turnStartSeq: more than kept
    assert await panel_errors(late.page) == []
    late.assert_clean()

    # likewise with an approval waiting whose request is no longer kept (a long turn before it; here its replay is
    # held back, as the turn is short): only its id is known (pendingApprovals), and that is enough to answer it
    await send(page, "/bash echo gone")
    box = transcript(page).locator(".approval").last
    await expect(box.locator("button[data-decision=allow_once]")).to_be_visible()
    third = await open_tab(context, url, token)
    third.tap.hold = lambda frame: (frame.get("params") or {}).get("type") == "approval_request"
    await open_listed(third.page, sid)
    third_box = transcript(third.page).locator(".approval").last
    await expect(third_box).to_contain_text("A tool waits for approval")
    await third_box.locator("button[data-decision=allow_once]").click()
    await expect(third_box.locator(".approval-result")).to_contain_text("Decision sent: allow once")
    await expect(box.locator("button")).to_have_count(0)
    await expect(box.locator(".approval-result")).to_contain_text("Answered elsewhere: allow once")
    for p in (page, third.page):
        await expect(transcript(p).locator(".bubble.assistant .text").last).to_contain_text("gone")
    assert await panel_errors(third.page) == []
    third.assert_clean()
    await context.close()


# ------------------------------------------------------------------------------------------------ approvals


@pytest.mark.req("R-MULTI-3")
async def test_an_approval_answered_in_one_tab_leaves_the_other(
    attach_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    _, url, token = attach_daemon
    a = await open_tab(context, url, token)
    sid = await new_session(a.page)
    b = await open_tab(context, url, token)
    await open_listed(b.page, sid)

    await send(a.page, "/bash echo hi")
    a_box = transcript(a.page).locator(".approval").last
    b_box = transcript(b.page).locator(".approval").last
    for box in (a_box, b_box):
        await expect(box.locator("button[data-decision=allow_once]")).to_be_visible()
    await b_box.locator("button[data-decision=allow_once]").click()
    await expect(b_box.locator(".approval-result")).to_contain_text("Decision sent: allow once")
    await expect(a_box.locator("button")).to_have_count(0)  # gone from the tab that did not answer
    await expect(a_box.locator(".approval-result")).to_contain_text("Answered elsewhere: allow once")
    for box in (a_box, b_box):  # answered: no deadline left to tell
        await expect(box).not_to_contain_text("rejected automatically")
    for page in (a.page, b.page):
        await expect(transcript(page).locator(".tool-output").last).to_have_text("hi\n[exit code 0]")
        await expect(transcript(page).locator(".bubble.assistant .text").last).to_contain_text("Command output")

    # a tab that opens the session while an approval waits shows the turn from its start (replayed), the
    # approval with it, and may answer it
    await send(a.page, "/bash echo later")
    a_box = transcript(a.page).locator(".approval").nth(1)
    await expect(a_box.locator("button[data-decision=reject]")).to_be_visible()
    c = await open_tab(context, url, token)
    await open_listed(c.page, sid)
    await expect(transcript(c.page).locator(".bubble.user .text").last).to_have_text("/bash echo later")
    c_box = transcript(c.page).locator(".approval").last
    await expect(c_box).to_contain_text("echo later")
    assert c.tap.results("replayed")[-1]["pendingApprovals"] == [await a_box.get_attribute("data-request-id")]
    await c_box.locator("button[data-decision=reject]").click()
    await expect(c_box.locator(".approval-result")).to_contain_text("Decision sent: reject")
    await expect(a_box.locator("button")).to_have_count(0)
    await expect(a_box.locator(".approval-result")).to_contain_text("Answered elsewhere: reject")
    await expect(transcript(c.page).locator(".bubble.assistant .text").last).to_contain_text("rejected")
    await expect(c.page.locator("#send")).to_be_enabled()

    # a late answer: B hears nothing after the request (as if slow), A answers, then B clicks and is told it
    # came too late (acknowledged:false)
    await send(a.page, "/bash echo third")
    a_box = transcript(a.page).locator(".approval").nth(2)
    b_box = transcript(b.page).locator(".approval").nth(2)
    await expect(b_box).to_contain_text("echo third")
    b.tap.hold = lambda f: f.get("method") == "session/update"
    await a_box.locator("button[data-decision=allow_once]").click()
    await expect(a_box.locator(".approval-result")).to_contain_text("Decision sent")
    await expect(transcript(a.page).locator(".tool-output").last).to_contain_text("third")
    await b_box.locator("button[data-decision=reject]").click()
    await expect(b_box.locator(".approval-result")).to_contain_text("Already answered elsewhere")
    await expect(b_box.locator("button")).to_have_count(0)
    for tab in (a, b, c):
        assert await panel_errors(tab.page) == []
        tab.assert_clean()
