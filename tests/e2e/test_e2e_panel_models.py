"""The panel's model picker (R-MODEL-4) in real headless Chromium against a real daemon: its choices are
`models/list` for the session's agent, choosing one is `session/configure` (the next turn runs on it), and another
tab on the same session follows the switch (`config_changed`). Set-up (daemon, token, Chromium) is test_e2e_panel's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from e2e_harness import Daemon, DaemonFactory
from playwright.async_api import Browser, BrowserContext, Page, expect
from test_e2e_panel import (
    WAIT_MS,
    browser,  # noqa: F401 - a fixture
    chromium_installed,  # noqa: F401 - an autouse fixture
    last_assistant,
    new_session,
    pair,
    send,
    sign_in,
    start_daemon,
)

CONFIG = """
[permission_profiles.admin]
admin = true

[users.web]
permission_profiles = ["admin"]

[providers.warm]
kind = "scripted"
model = "warm-1"

[agents.second]
provider = "warm"
"""


@pytest.fixture(scope="module")
def models_daemon() -> Iterator[tuple[Daemon, str, str]]:
    factory = DaemonFactory()
    try:
        d, url = start_daemon(factory, config=CONFIG)
        yield d, url, asyncio.run(pair(d))
    finally:
        factory.close()


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:  # noqa: F811 - the imported fixture
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield ctx
    finally:
        await ctx.close()


async def open_tab(context: BrowserContext, url: str, token: str) -> tuple[Page, list[str]]:
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(url + "/", wait_until="load")
    await sign_in(page, token)
    return page, errors


@pytest.mark.req("R-MODEL-4")
async def test_the_model_picker_switches_the_session_and_other_tabs_follow(
    models_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    d, url, token = models_daemon
    a, a_errors = await open_tab(context, url, token)
    sid = await new_session(a, "second")
    picker = a.locator("#chat-model")
    await expect(picker).to_have_value("warm-1")
    await expect(picker.locator("option")).to_have_text(["warm-1", "scripted"])
    await send(a, "/model")
    await expect(await last_assistant(a)).to_have_text("model: warm-1, temperature: default")

    b, b_errors = await open_tab(context, url, token)
    await b.click("#refresh-sessions")
    await b.locator(f'#session-list li[data-session-id="{sid}"] button').click()
    await expect(b.locator("#chat-title")).to_have_text(sid)
    await expect(b.locator("#chat-model")).to_have_value("warm-1")

    await picker.select_option("scripted")
    await expect(b.locator("#chat-model")).to_have_value("scripted")  # config_changed reached the other tab
    await send(a, "/model")
    await expect(await last_assistant(a)).to_have_text("model: scripted, temperature: default")
    async with await d.client() as c:
        listed = (await c.call("session/list"))["sessions"]
    assert [e["model"] for e in listed if e["sessionId"] == sid] == ["scripted"]
    assert not a_errors and not b_errors, (a_errors, b_errors)
