"""Automatic trimming of the retained context (R-ACP-1): when a limit is exceeded the context is cut to `TRIM_TO` of
each limit, at a user message, so a session at its limit writes a snapshot every few turns instead of every turn."""

from __future__ import annotations

from typing import Any

import pytest

from app.sessions.live.trim import TRIM_TO, trim_context


def _turns(count: int, text: str = "hi") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        out += [{"role": "user", "content": f"{text}{i}"}, {"role": "assistant", "content": f"re {text}{i}"}]
    return out


@pytest.mark.req("R-ACP-1")
def test_nothing_is_cut_while_both_limits_hold() -> None:
    assert trim_context(_turns(100), 200, 10_000) is None
    assert trim_context([], 1, 1) is None


@pytest.mark.req("R-ACP-1")
def test_over_max_messages_the_context_is_cut_to_three_quarters_at_a_user_message() -> None:
    messages = _turns(101)  # 202 messages, limit 200
    trimmed = trim_context(messages, 200, 1_000_000)
    assert trimmed is not None
    assert len(trimmed.kept) <= 200 * TRIM_TO and len(trimmed.kept) == 150
    assert trimmed.dropped == 52 and trimmed.kept[0]["role"] == "user"
    assert trimmed.kept == messages[52:]


@pytest.mark.req("R-ACP-1")
def test_over_max_chars_the_context_is_cut_to_three_quarters_of_the_characters() -> None:
    messages = _turns(10, "x" * 96)  # user 97-98 chars, assistant 100-101
    total = sum(len(m["content"]) for m in messages)
    trimmed = trim_context(messages, 1_000, total - 1)
    assert trimmed is not None
    kept_chars = sum(len(m["content"]) for m in trimmed.kept)
    assert kept_chars <= (total - 1) * TRIM_TO < kept_chars + 200  # as much as fits, whole exchanges only
    assert trimmed.kept[0]["role"] == "user"


@pytest.mark.req("R-ACP-1")
def test_the_newest_exchange_is_kept_whole_even_over_a_limit() -> None:
    messages = [*_turns(1), {"role": "user", "content": "y" * 500}, {"role": "assistant", "content": "z" * 500}]
    trimmed = trim_context(messages, 10, 100)
    assert trimmed is not None and trimmed.kept == messages[2:]


@pytest.mark.req("R-ACP-1")
def test_a_session_at_its_limit_trims_once_every_quarter_limit_not_every_turn() -> None:
    context: list[dict[str, Any]] = []
    trims = 0
    for turn in range(1_000):
        context += _turns(1, f"t{turn}-")
        trimmed = trim_context(context, 200, 10**9)
        if trimmed is not None:
            trims += 1
            context = trimmed.kept
        assert len(context) <= 200
    # The first trim comes at 202 messages (turn 101) and cuts to 150; the context then has 26 turns to grow
    # before the next. Cutting to just within the limit would trim on each of the last 900 turns.
    assert trims == 1 + (1_000 - 101) // 26
