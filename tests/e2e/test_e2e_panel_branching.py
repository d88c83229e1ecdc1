"""Branching in the panel (R-BRANCH-5) in real headless Chromium against a real daemon, with two tabs on one session:
a steer typed in one tab while a turn runs shows in both (and reaches the model: `/context`); tab A branches from a
prompt and sees the child open, with its parent shown, while tab B streams a `/stream` turn of the parent
undisturbed; "Undo last turn" in tab B redraws the parent's transcript in tab A. Set-up is test_e2e_panel's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from e2e_harness import Daemon, DaemonFactory
from playwright.async_api import Browser, BrowserContext, Locator, Page, expect
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
    transcript,
)

STREAMED = 2000  # `/stream` chunks of "lorem ": long enough to be running while the other tab branches


@pytest.fixture(scope="module")
def branch_daemon() -> Iterator[tuple[Daemon, str, str]]:
    factory = DaemonFactory()
    try:
        d, url = start_daemon(factory)
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


def prompts(page: Page) -> Locator:
    return transcript(page).locator(".bubble.user .text")


@pytest.mark.req("R-BRANCH-5")
@pytest.mark.req("R-BRANCH-3")
async def test_two_tabs_steer_branch_while_the_other_streams_and_undo_redraws_the_other(
    branch_daemon: tuple[Daemon, str, str], context: BrowserContext
) -> None:
    _d, url, token = branch_daemon
    a, a_errors = await open_tab(context, url, token)
    sid = await new_session(a)
    for text in ("one", "two"):
        await send(a, text)
        await expect(await last_assistant(a)).to_have_text(f"You said: «{text}»")
    b, b_errors = await open_tab(context, url, token)
    await b.click("#refresh-sessions")
    await b.locator(f'#session-list li[data-session-id="{sid}"] button').click()
    await expect(b.locator("#chat-title")).to_have_text(sid)
    await expect(prompts(b)).to_have_text(["one", "two"])

    # A steer typed in tab B while tab A's turn waits for its approval: shown in both, and the model got it.
    await expect(a.locator("#steer")).to_be_hidden()
    await send(a, "/bash echo steer-me")
    allow = transcript(a).locator(".approval button[data-decision=allow_once]")
    await expect(allow).to_be_visible()
    await expect(b.locator("#steer")).to_be_visible()
    await b.fill("#steer-text", "/context")
    await b.click("#steer-send")
    await allow.click()
    for page in (a, b):
        await expect(transcript(page).locator(".bubble.user.steered .text")).to_have_text("/context")
        await expect(await last_assistant(page)).to_contain_text("user: /context")
        await expect(page.locator("#steer")).to_be_hidden()  # the turn ended
    await expect(prompts(a)).to_have_text(["one", "two", "/bash echo steer-me", "/context"])

    # Tab B streams a turn of the parent while tab A branches from the prompt "two" (row 2) and sees the child.
    await send(b, f"/stream {STREAMED}")
    # Tab A shows the stream too (the transcript scrolls under the pointer): the button's click, not the mouse's.
    await transcript(a).locator('.bubble.user[data-index="2"] .branch').dispatch_event("click")
    await expect(a.locator("#chat-title")).not_to_have_text(sid)
    child = await a.text_content("#chat-title")
    await expect(a.locator("#chat-parent")).to_contain_text(sid)
    await expect(prompts(a)).to_have_text(["one"])
    await expect(b.locator("#send")).to_be_enabled()  # B's turn ended
    await expect(b.locator("#chat-title")).to_have_text(sid)
    streamed = await (await last_assistant(b)).text_content()
    assert streamed is not None and streamed.split() == ["lorem"] * STREAMED
    await send(a, "in the branch")
    await expect(await last_assistant(a)).to_have_text("You said: «in the branch»")
    await expect(a.locator(f'#session-list li[data-session-id="{child}"]')).to_have_count(1)

    # Back on the parent in tab A (it kept following it); "Undo last turn" in tab B redraws both.
    await a.click("#open-parent")
    await expect(a.locator("#chat-title")).to_have_text(sid)
    await expect(prompts(a)).to_have_text(["one", "two", "/bash echo steer-me", "/context", f"/stream {STREAMED}"])
    await b.click("#undo-turn")
    for page in (a, b):
        await expect(prompts(page)).to_have_text(["one", "two", "/bash echo steer-me", "/context"])
        await expect(transcript(page).locator('.marker[data-marker="rolled_back"]')).to_contain_text("1 turn(s) undone")
        # Read again from the transcript, the steer is still told from a prompt: no fork inside a turn.
        await expect(transcript(page).locator(".bubble.user.steered .text")).to_have_text("/context")
        await expect(transcript(page).locator(".bubble.user .branch")).to_have_count(3)
    assert not a_errors and not b_errors, (a_errors, b_errors)
