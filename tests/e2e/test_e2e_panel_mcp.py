"""The panel shows an MCP tool call like a built-in one, its progress in the card, and the MCP servers and their
states in the Status view (R-MCP-3, R-MCP-4), in real headless Chromium."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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

CRASHY = Path(__file__).resolve().parent / "mcp_servers" / "crashy.py"
WITH_MCP = (
    CONFIG
    + f"""
[mcp.servers.crashy]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(CRASHY))}]

[agents.default]
mcp_servers = ["crashy"]
auto_approve = ["mcp__crashy__*"]
"""
)


@pytest.mark.req("R-MCP-3")
@pytest.mark.req("R-MCP-4")
@pytest.mark.req("R-GW-5")
async def test_mcp_tool_cards_and_server_states(daemon_factory: DaemonFactory, browser: Browser) -> None:  # noqa: F811
    d, url = start_daemon(daemon_factory, config=WITH_MCP)
    token = await pair(d)
    watched = await open_panel(browser, url)
    page = watched.page
    await sign_in(page, token)
    await page.click("#tab-status")
    await expect(page.locator("#mcp-servers")).to_contain_text("crashy")
    await expect(page.locator('#mcp-servers [data-server="crashy"]')).to_have_attribute("data-state", "stopped")
    await page.click("#tab-sessions")
    await new_session(page)
    await send(page, '/tool mcp__crashy__steps {"count": 2}')
    card = transcript(page).locator('details.tool[data-tool="mcp__crashy__steps"]')
    await expect(card).to_have_count(1)
    await expect(card.locator(".tool-output")).to_have_text("2 steps done")
    await expect(card.locator(".tool-status")).to_have_text("done")
    await page.click("#tab-status")
    await page.click("#refresh-status")
    server = page.locator('#mcp-servers [data-server="crashy"]')
    await expect(server).to_have_attribute("data-state", "ready")
    await expect(server).to_contain_text("steps")
    watched.assert_clean()
