"""The web control panel (`GET /`, `web/`) driven in real headless Chromium against a real daemon (R-GW-5).

The panel talks to the daemon only through `/rpc` (WebSocket JSON-RPC). A token is paired over the local socket,
then the browser signs in, starts a session, runs `/bash` with an approval, answers `/ask` and `/poll` forms,
cancels a slow turn, kills the session and sees it marked killed; config errors show their entry index; a
390 px viewport stays usable; an interruption marker row is shown as such.

Chromium is Debian's (`/usr/bin/chromium`, nothing is downloaded). `PANEL_SCREENSHOT=1` also writes the chat
screenshot to `docs/panel-chat.png` (otherwise it goes to the test's tmp dir only).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, REPO_ROOT, Daemon, DaemonFactory
from playwright.async_api import Browser, Locator, Page, async_playwright, expect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's package; Playwright downloads nothing
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 10_000  # every browser wait is bounded by this
INTERRUPTED = "Turn interrupted: the daemon stopped before it finished."

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")


@pytest.fixture(autouse=True)
def chromium_installed() -> None:
    """A missing browser fails the panel tests: a skip would let CI pass without ever opening the panel."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's `chromium` (apt-get install chromium)")


CONFIG = """
[permission_profiles.admin]
admin = true

[users.web]
permission_profiles = ["admin"]

[agents.helper]
system_prompt = "A second agent, to choose from."

[tools]
ask_timeout_secs = 30
approval_timeout_secs = 30
"""

expect.set_options(timeout=WAIT_MS)


def gateway_url(d: Daemon) -> str:
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return m["gateway"]


def start_daemon(factory: DaemonFactory, **kw: Any) -> tuple[Daemon, str]:
    d = factory.start(kw.pop("config", CONFIG), no_gateway=False, args=["--gateway-port", "0"], **kw)
    return d, gateway_url(d)


async def pair(d: Daemon, user: str = "web") -> str:
    async with await d.client() as c:
        result = await c.call("pairing/create", {"user": user, "label": "panel e2e"})
    token: str = result["token"]
    return token


@pytest.fixture(scope="module")
def panel_daemon() -> Iterator[tuple[Daemon, str, str]]:
    """One daemon with its gateway for the tests that do not restart it: (daemon, gateway url, web token)."""
    factory = DaemonFactory()
    try:
        d, url = start_daemon(factory)
        yield d, url, asyncio.run(pair(d))
    finally:
        factory.close()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=WAIT_MS)
        try:
            yield b
        finally:
            await b.close()


class Watched:
    """A page plus what its console said (CSP violations and script errors land there)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))

    def assert_clean(self) -> None:
        assert not self.page_errors, self.page_errors
        assert not self.console_errors, self.console_errors


async def open_panel(browser: Browser, url: str, *, width: int = 1280, height: int = 860) -> Watched:
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    watched = Watched(page)
    await page.goto(url + "/", wait_until="load")
    return watched


async def sign_in(page: Page, token: str) -> None:
    await page.fill("#token", token)
    await page.click("#signin-button")
    await expect(page.locator("#app-view")).to_be_visible()
    await expect(page.locator("#whoami")).to_contain_text("user:web")


async def send(page: Page, text: str) -> None:
    """Type a prompt and send it once the previous turn is over."""
    await expect(page.locator("#send")).to_be_enabled()
    await page.fill("#prompt", text)
    await page.click("#send")


def transcript(page: Page) -> Locator:
    return page.locator("#transcript-host .transcript")


async def question(page: Page, number: int) -> Locator:
    """The `number`-th (1-based) elicitation form of the open session, once it is there."""
    forms = transcript(page).locator("form.elicit")
    await expect(forms).to_have_count(number)
    return forms.nth(number - 1)


async def last_assistant(page: Page) -> Locator:
    """The text of the newest assistant bubble."""
    return transcript(page).locator(".bubble.assistant .text").last


async def new_session(page: Page, agent: str = "default") -> str:
    before = await page.text_content("#chat-title") or ""
    await page.select_option("#new-agent", agent)
    await page.click("#new-session-button")
    if before:
        await expect(page.locator("#chat-title")).not_to_have_text(before)
    await expect(page.locator("#chat-title")).to_have_text(re.compile(r"^s_[0-9a-f]{32}$"))
    sid = await page.text_content("#chat-title")
    assert sid
    await expect(page.locator(f'#session-list li[data-session-id="{sid}"]')).to_have_attribute("data-state", "live")
    return sid


# ------------------------------------------------------------------------------------------------ the page


@pytest.mark.req("R-GW-5")
async def test_panel_is_static_self_contained_and_csp_friendly(panel_daemon: tuple[Daemon, str, str]) -> None:
    _, url, _ = panel_daemon
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=5) as client:
        index = await client.get("/")
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        csp = index.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp, csp
        for name, kind in (("app.js", "javascript"), ("rpc.js", "javascript"), ("style.css", "text/css")):
            r = await client.get(f"/static/{name}")
            assert r.status_code == 200 and kind in r.headers["content-type"], (name, r.headers)
        assert (await client.get("/static/nope.js")).status_code == 404
        assert (await client.get("/", headers={"Host": "evil.example"})).status_code == 400  # R-GW-6 applies
    web = REPO_ROOT / "web"
    for path in web.iterdir():
        text = path.read_text()
        if path.suffix in (".html", ".js", ".css"):
            assert not re.search(r"https?://", text), f"{path.name} refers to another site"
        if path.suffix == ".js":
            sink = re.search(
                r"\.(innerHTML|outerHTML)\s*[+]?=|insertAdjacentHTML\(|document\.write|\beval\(|new Function", text
            )
            assert sink is None, f"{path.name} uses {sink and sink[0]}"
        if path.suffix == ".html":
            assert not re.search(r"\son[a-z]+\s*=", text), f"{path.name} has an inline event handler"
            assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", text), f"{path.name} has an inline script"
            assert "style=" not in text, f"{path.name} has an inline style"


@pytest.mark.req("R-GW-5")
async def test_sign_in_chat_approve_answer_cancel_and_kill(
    panel_daemon: tuple[Daemon, str, str], browser: Browser, tmp_path: Path
) -> None:
    d, url, token = panel_daemon
    started = time.monotonic()
    w = await open_panel(browser, url, height=1000)
    page = w.page

    # sign in: principal and daemon status
    await sign_in(page, token)
    await expect(page.locator("#whoami")).to_contain_text("admin")
    status_line = page.locator("#status-line")
    await expect(status_line).to_contain_text(re.compile(r"v\d+\.\d+"))
    await expect(status_line).to_contain_text("up ")
    await expect(status_line).to_contain_text("connection")
    assert await page.evaluate("sessionStorage.getItem('zeroclaw.token')") == token

    # agents come from config/get
    options = await page.locator("#new-agent option").all_text_contents()
    assert {"default", "helper"} <= set(options), options
    sid = await new_session(page)

    # /bash: tool call with its input, an approval, the output, then the final text
    await send(page, "/bash echo hi")
    card = transcript(page).locator("details.tool").last
    await expect(card.locator(".tool-name")).to_have_text("bash")
    await expect(card.locator(".tool-input")).to_contain_text("echo hi")
    approval = card.locator(".approval")
    await expect(approval.locator("button[data-decision=allow_once]")).to_be_visible()
    await expect(approval.locator("button[data-decision=allow_always]")).to_be_visible()
    await expect(approval.locator("button[data-decision=reject]")).to_be_visible()
    # issue 38 §5.6: a deadline while it waits, and no word of it once answered
    deadline = re.compile(r"^Answer by \S+.*, or it is rejected automatically \(30 s after it was asked\)\.$")
    await expect(approval.locator(".approval-deadline")).to_have_text(deadline)
    await approval.locator("button[data-decision=allow_once]").click()
    await expect(approval.locator(".approval-result")).to_contain_text("allow once")
    await expect(approval.locator(".approval-deadline")).to_have_count(0)
    await expect(approval).not_to_contain_text("rejected automatically")
    await expect(card.locator(".tool-output")).to_have_text("hi\n[exit code 0]")
    await expect(await last_assistant(page)).to_have_text(re.compile(r"Command output:\s*hi\s*\[exit code 0\]"))

    # /ask: a text field built from requestedSchema, answered with action "accept"
    await send(page, "/ask What is your name?")
    form = await question(page, 1)
    await expect(form.locator(".elicit-message")).to_contain_text("What is your name?")
    answer = form.get_by_label("What is your name?")
    await answer.fill("Ada Lovelace")
    shot = tmp_path / "panel-chat.png"
    await page.screenshot(path=str(shot))
    if os.environ.get("PANEL_SCREENSHOT"):
        (REPO_ROOT / "docs" / "panel-chat.png").write_bytes(shot.read_bytes())
    await form.locator("button[type=submit]").click()
    await expect(form.locator(".elicit-result")).to_contain_text("You answered: answer = Ada Lovelace")
    await expect(await last_assistant(page)).to_have_text("Answer: «Ada Lovelace»")

    # /poll: the enum becomes radio buttons
    await send(page, "/poll Which colour? | red | green | blue")
    form = await question(page, 2)
    await expect(form.locator("legend")).to_have_text("choice")
    await form.get_by_label("green").check()
    await form.locator("button[type=submit]").click()
    await expect(await last_assistant(page)).to_contain_text("Choice: «green»")

    # a declined question is answered {"action":"decline"}
    await send(page, "/ask Anything to add?")
    form = await question(page, 3)
    await expect(form.locator(".elicit-message")).to_contain_text("Anything to add?")
    await form.get_by_role("button", name="Decline").click()
    await expect(await last_assistant(page)).to_contain_text("The user declined to answer.")

    # daemon-provided text is never markup
    await send(page, "<img src=x onerror=\"document.title='owned'\"><b>bold</b>")
    await expect(await last_assistant(page)).to_contain_text("<img src=x onerror=")
    await expect(await last_assistant(page)).to_contain_text("<b>bold</b>")
    assert await transcript(page).locator("img, b").count() == 0
    assert await page.title() == "zeroclaw control panel"

    # /think: a collapsed thought
    await send(page, "/think a quiet thought")
    thought = transcript(page).locator("details.thought").last
    await expect(await last_assistant(page)).to_contain_text("I have thought it over.")
    assert await thought.get_attribute("open") is None
    await expect(thought.locator(".thought-text")).to_be_hidden()
    await thought.locator("summary").click()
    await expect(thought.locator(".thought-text")).to_have_text("a quiet thought")

    # cancel a slow turn
    await send(page, "/sleep 20")
    await expect(await last_assistant(page)).to_contain_text("Sleeping for 20")
    await expect(page.locator("#cancel")).to_be_enabled()
    await page.click("#cancel")
    await expect(transcript(page).locator(".stop[data-stop-reason=cancelled]")).to_be_visible()
    await expect(page.locator("#send")).to_be_enabled()

    # kill, with a confirmation step ("Keep it" first: nothing happens)
    await page.click("#kill-session")
    await expect(page.locator("#confirm-bar")).to_be_visible()
    await page.click("#confirm-no")
    await expect(page.locator("#confirm-bar")).to_be_hidden()
    item = page.locator(f'#session-list li[data-session-id="{sid}"]')
    await expect(item).to_have_attribute("data-state", "live")
    await page.click("#kill-session")
    await expect(page.locator("#confirm-text")).to_contain_text("never be resumed")
    await page.click("#confirm-yes")
    await expect(item).to_have_attribute("data-state", "killed")
    await expect(item.locator(".badge")).to_have_text("killed")
    await expect(page.locator("#chat-state")).to_have_text("killed")
    await expect(page.locator("#send")).to_be_disabled()
    await expect(page.locator("#composer-note")).to_contain_text("killed")

    # the killed session's transcript is still readable (session/messages)
    await page.click("#reload-session")
    await expect(transcript(page).locator(".bubble.user .text").first).to_have_text("/bash echo hi")
    await expect(transcript(page).locator(".tool-output").first).to_have_text("hi\n[exit code 0]")
    async with await d.client() as c:
        listed = await c.call("session/list", {"includeKilled": True})
    assert any(s["sessionId"] == sid and s["killed"] for s in listed["sessions"]), listed

    # delete another session (confirmation step again)
    other = await new_session(page, agent="helper")
    await expect(page.locator("#chat-meta")).to_contain_text("agent helper")
    await page.click("#delete-session")
    await page.click("#confirm-yes")
    await expect(page.locator(f'#session-list li[data-session-id="{other}"]')).to_have_count(0)
    await expect(page.locator("#chat-empty")).to_be_visible()

    # sign out forgets the token
    await page.click("#signout")
    await expect(page.locator("#signin-view")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('zeroclaw.token')") is None
    w.assert_clean()
    assert time.monotonic() - started < 45


@pytest.mark.req("R-GW-5")
async def test_errors_are_shown_in_words(panel_daemon: tuple[Daemon, str, str], browser: Browser) -> None:
    d, url, token = panel_daemon
    w = await open_panel(browser, url)
    page = w.page

    # a token nobody paired
    await page.fill("#token", "zc_" + "0" * 64)
    await page.click("#signin-button")
    await expect(page.locator("#signin-error")).to_contain_text("-32010")
    await expect(page.locator("#signin-error")).to_contain_text("auth_required")
    await sign_in(page, token)

    await page.click("#tab-config")
    await expect(page.locator('#config-table tr[data-prop="limits.max_sessions"]')).to_be_visible()
    await expect(page.locator('#config-table tr[data-prop="agents.helper.system_prompt"] .value')).to_contain_text(
        "A second agent"
    )

    # one property: good, then a value of the wrong type
    await page.fill("#cfg-prop", "limits.max_sessions")
    await page.fill("#cfg-value", "32")
    await page.click("#cfg-set")
    await expect(page.locator("#cfg-set-result")).to_contain_text("Set limits.max_sessions = 32")
    await expect(page.locator('#config-table tr[data-prop="limits.max_sessions"] .value')).to_have_text("32")
    await page.fill("#cfg-value", "lots")
    await page.click("#cfg-set")
    await expect(page.locator("#cfg-set-result")).to_contain_text("Error -32602 (invalid_params)")

    # a batch whose second entry is invalid: the error names index 1, that row is marked, nothing is saved
    rows = page.locator("#batch-rows tr")
    await expect(rows).to_have_count(2)
    await rows.nth(0).locator(".batch-prop").fill("limits.max_connections")
    await rows.nth(0).locator(".batch-value").fill("500")
    await rows.nth(1).locator(".batch-prop").fill("limits.max_sessions")
    await rows.nth(1).locator(".batch-value").fill('"many"')
    await page.click("#batch-apply")
    result = page.locator("#batch-result")
    await expect(result).to_contain_text("Error -32602 (invalid_params)")
    await expect(result).to_contain_text("entry index 1")
    await expect(result).to_contain_text("limits.max_sessions")
    await expect(rows.nth(1)).to_have_class(re.compile(r"\brow-error\b"))
    await expect(rows.nth(0)).not_to_have_class(re.compile(r"\brow-error\b"))
    async with await d.client() as c:
        assert (await c.call("config/get", {"prop": "limits.max_connections"}))["value"] == 1024

    # an unknown property in a batch, then a batch that works
    await page.click("#batch-add")
    await rows.nth(2).locator(".batch-prop").fill("limits.no_such_limit")
    await rows.nth(2).locator(".batch-value").fill("1")
    await rows.nth(1).locator(".batch-value").fill("40")
    await page.click("#batch-apply")
    await expect(result).to_contain_text("entry index 2")
    await rows.nth(2).get_by_role("button", name="Remove row").click()
    await page.click("#batch-apply")
    await expect(result).to_contain_text("Saved 2 properties: limits.max_connections, limits.max_sessions")
    async with await d.client() as c:
        assert (await c.call("config/get", {"prop": "limits.max_connections"}))["value"] == 500
        await c.call("config/set-many", {"sets": [{"prop": "limits.max_connections", "value": 1024}]})

    # a daemon error during chat goes to the error list: a second prompt while a turn runs (-32002) is not
    # possible from the page (Send is disabled), so prompt a session killed behind the page's back
    await page.click("#tab-sessions")
    sid = await new_session(page)
    async with await d.client() as c:
        await c.call("session/kill", {"sessionId": sid})
    await send(page, "hello?")
    await expect(page.locator("#errors")).to_contain_text("Send message: Error -32000 (session_not_found)")
    await expect(transcript(page).locator(".stop-error")).to_contain_text("-32000")
    w.assert_clean()


@pytest.mark.req("R-GW-5")
async def test_narrow_screen(panel_daemon: tuple[Daemon, str, str], browser: Browser) -> None:
    _, url, token = panel_daemon
    w = await open_panel(browser, url, width=390, height=844)
    page = w.page

    async def no_horizontal_scroll() -> None:
        sizes = await page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]"
        )
        assert sizes[0] <= 390 and sizes[2] <= 390, sizes

    await sign_in(page, token)
    await no_horizontal_scroll()
    await expect(page.locator("#sidebar")).to_be_visible()
    await expect(page.locator("#chat")).to_be_hidden()  # one column: the list, or the open chat
    await new_session(page)
    await expect(page.locator("#sidebar")).to_be_hidden()
    await expect(page.locator("#back")).to_be_visible()
    await send(page, "hello from a phone with a rather long message that has to wrap inside the bubble")
    await expect(await last_assistant(page)).to_contain_text("You said")
    await send(page, "/bash echo narrow")
    await transcript(page).locator("button[data-decision=allow_once]").click()
    await expect(transcript(page).locator(".tool-output").last).to_contain_text("narrow")
    for selector in ("#send", "#prompt", "#kill-session", "#chat-title"):
        box = await page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
    await no_horizontal_scroll()
    await page.click("#back")
    await expect(page.locator("#sidebar")).to_be_visible()
    await page.click("#tab-config")
    await expect(page.locator("#config-batch")).to_be_attached()
    await no_horizontal_scroll()
    await page.click("#tab-status")
    await expect(page.locator("#status-details")).to_contain_text("Connections")
    await no_horizontal_scroll()
    w.assert_clean()


@pytest.mark.req("R-GW-5")
async def test_interrupted_turn_shows_a_marker(daemon_factory: DaemonFactory, browser: Browser) -> None:
    d, _ = start_daemon(daemon_factory)
    token = await pair(d)
    async with await d.client() as c:
        sid = (await c.call("session/new"))["sessionId"]
        await c.send(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": "/sleep 30"},
            }
        )
        deadline = time.monotonic() + 5
        chunks = 0
        while chunks < 4:
            assert time.monotonic() < deadline, "no streaming from /sleep"
            frame = await c.recv(timeout=5)
            if frame.get("params", {}).get("type") == "agent_message_chunk":
                chunks += 1
        await asyncio.sleep(0.6)  # checkpointed text (R-ACP-4)
        d.send_signal(9)
        d.wait_exit()
    d2 = daemon_factory.start(config_dir=d.config_dir, root=d.root, no_gateway=False, args=["--gateway-port", "0"])
    async with await d2.client() as c:
        assert (await c.call("session/new", {"sessionId": sid}))["resumed"] is True  # appends the marker
        await c.call("session/close", {"sessionId": sid})

    w = await open_panel(browser, gateway_url(d2))
    page = w.page
    await sign_in(page, token)
    item = page.locator(f'#session-list li[data-session-id="{sid}"]')
    await expect(item).to_have_attribute("data-state", "closed")
    await item.locator("button").click()
    marker = transcript(page).locator(".marker[data-marker=interrupted]")
    await expect(marker).to_contain_text("Interrupted")
    await expect(marker).to_contain_text(INTERRUPTED)
    await expect(transcript(page).locator(".bubble.assistant").first).to_contain_text("Sleeping for 30")
    # a closed ACP session can be prompted again from the panel (it is rehydrated)
    await send(page, "back again")
    await expect(await last_assistant(page)).to_contain_text("You said")
    await expect(item).to_have_attribute("data-state", "live")
    w.assert_clean()


@pytest.mark.req("R-MULTI-4")
async def test_the_session_list_pages_and_searches_titles(daemon_factory: DaemonFactory, browser: Browser) -> None:
    d, url = start_daemon(daemon_factory)
    token = await pair(d)
    async with await d.client() as c:
        for n in range(57):
            sid = (await c.call("session/new", {"mode": "chat" if n % 4 == 0 else "acp"}))["sessionId"]
            if n % 10 == 3:  # 3, 13, 23, 33, 43, 53: the older ones only reachable past the first page
                await c.call("session/prompt", {"sessionId": sid, "prompt": f"Needle number {n}\nmore text"})
        newest = (await c.call("session/list", {"limit": 1000}))["sessions"]

    w = await open_panel(browser, url, height=1000)
    page = w.page
    await sign_in(page, token)
    items = page.locator("#session-list li")
    await expect(items).to_have_count(50)  # one page
    ids = [await items.nth(i).get_attribute("data-session-id") for i in range(50)]
    assert ids == [s["sessionId"] for s in newest[:50]]  # the daemon's order: newest activity first
    more = page.locator("#more-sessions")
    await expect(more).to_be_visible()
    await more.click()
    await expect(items).to_have_count(57)
    await expect(more).to_be_hidden()
    ids = [await items.nth(i).get_attribute("data-session-id") for i in range(57)]
    assert ids == [s["sessionId"] for s in newest]  # each once, in order

    await page.fill("#session-search", "NEEDLE")
    await expect(items).to_have_count(6)
    await expect(items.first.locator(".session-title")).to_have_text(re.compile(r"^Needle number \d+$"))
    await page.fill("#session-search", "needle number 4")
    await expect(items).to_have_count(1)
    await expect(items.first.locator(".session-title")).to_have_text("Needle number 43")
    await page.fill("#session-search", "nothing like it")
    await expect(items).to_have_count(0)
    await expect(page.locator("#session-list-empty")).to_have_text("No session title matches.")
    await page.fill("#session-search", "")
    await expect(items).to_have_count(50)
    w.assert_clean()


@pytest.mark.req("R-GUARD-3")
async def test_approval_always_for_this_agent_and_the_rules_card(
    panel_daemon: tuple[Daemon, str, str], browser: Browser
) -> None:
    """The approval card offers "always for this session" and "always for this agent"; the latter's rule shows in
    the Config tab, which deletes it."""
    _, url, token = panel_daemon
    w = await open_panel(browser, url, height=1000)
    page = w.page
    await sign_in(page, token)
    await new_session(page)
    await send(page, "/bash echo panel-remembered")
    approval = transcript(page).locator("details.tool").last.locator(".approval")
    await expect(approval.locator("button[data-decision=allow_always]")).to_have_text("Always for this session")
    await expect(approval.locator("button[data-decision=reject_always]")).to_be_visible()
    await approval.locator("button[data-decision=allow_agent]").click()
    await expect(approval.locator(".approval-result")).to_contain_text("always for this agent")
    await expect(await last_assistant(page)).to_contain_text("panel-remembered")
    # another session of the agent runs it without asking
    await new_session(page)
    await send(page, "/bash echo panel-remembered")
    await expect(await last_assistant(page)).to_contain_text("panel-remembered")
    await expect(transcript(page).locator(".approval")).to_have_count(0)
    await page.click("#tab-config")
    row = page.locator("#rules-table tbody tr")
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("allow bash(echo panel-remembered)")
    await row.locator("button", has_text="Delete").click()
    await expect(page.locator("#rules-result")).to_contain_text("Deleted")
    await expect(row).to_have_count(0)
    await expect(page.locator("#rules-empty")).to_be_visible()
    w.assert_clean()
