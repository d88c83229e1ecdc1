"""The panel shows what each turn cost and the session's total (R-MODEL-5), in real headless Chromium.

The scripted provider counts words; `[providers.scripted.pricing]` makes each word in $1 and each word out $2.
"""

from __future__ import annotations

import pytest
from e2e_harness import DaemonFactory
from playwright.async_api import Browser, expect
from test_e2e_panel import (
    CONFIG,
    browser,  # noqa: F401 (a fixture)
    chromium_installed,  # noqa: F401 (a fixture)
    new_session,
    open_panel,
    pair,
    send,
    sign_in,
    start_daemon,
    transcript,
)

PRICED = CONFIG + "\n[providers.scripted.pricing]\ninput_per_mtok = 1000000\noutput_per_mtok = 2000000\n"


@pytest.mark.req("R-MODEL-5")
@pytest.mark.req("R-GW-5")
async def test_each_turn_shows_its_tokens_and_cost_and_the_head_the_sessions_total(
    daemon_factory: DaemonFactory,
    browser: Browser,  # noqa: F811
) -> None:
    d, url = start_daemon(daemon_factory, config=PRICED)
    token = await pair(d)
    watched = await open_panel(browser, url)
    page = watched.page
    await sign_in(page, token)
    await new_session(page)
    await send(page, "the quick brown fox")  # 4 words in, "You said: «the quick brown fox»" 6 out
    lines = transcript(page).locator(".usage")
    await expect(lines).to_have_count(1)
    await expect(lines.first).to_have_text("Tokens: 4 in · 6 out · $16.00")
    await expect(page.locator("#chat-usage")).to_have_text(" · session Tokens: 4 in · 6 out · $16.00")
    await send(page, "one two")  # the first turn is context now: 4 + 6 + 2 in, 4 out
    await expect(lines).to_have_count(2)
    await expect(lines.nth(1)).to_have_text("Tokens: 12 in · 4 out · $20.00")
    await expect(page.locator("#chat-usage")).to_have_text(" · session Tokens: 16 in · 10 out · $36.00")
    # The panel opened afresh reads the total back (session/usage), the daemon stored it.
    again = await open_panel(browser, url)
    await sign_in(again.page, token)
    await again.page.locator("#session-list li").first.click()
    await expect(again.page.locator("#chat-usage")).to_have_text(" · session Tokens: 16 in · 10 out · $36.00")
    watched.assert_clean()
    again.assert_clean()
