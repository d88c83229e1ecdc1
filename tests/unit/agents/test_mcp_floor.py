"""app.agents.mcp.floor: calls of one session share a server at once, another session's wait for them to end, and
the value (where an elicitation goes) is the holder's."""

from __future__ import annotations

import asyncio

import pytest

from app.agents.mcp.floor import Floor


@pytest.mark.req("R-MCP-3")
async def test_another_session_waits_and_the_value_is_the_holders() -> None:
    floor: Floor[str] = Floor()
    entered: list[str] = []
    release_a = asyncio.Event()

    async def call(holder: str, value: str, until: asyncio.Event | None = None) -> None:
        async with floor.held(holder, value):
            entered.append(holder)
            assert floor.value == value
            if until is not None:
                await until.wait()

    first = asyncio.create_task(call("a", "ask a", release_a))
    second = asyncio.create_task(call("a", "ask a"))  # the same session: does not wait
    other = asyncio.create_task(call("b", "ask b"))
    await asyncio.wait({second})
    assert entered == ["a", "a"] and not other.done() and floor.holder == "a"
    release_a.set()
    await asyncio.gather(first, other)
    assert entered == ["a", "a", "b"]
    assert floor.holder is None and floor.value is None
