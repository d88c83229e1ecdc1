"""A turn's usage meter (R-MODEL-5): each provider step priced and sent, the turn's sum, the daemon's counters."""

from __future__ import annotations

from typing import Any

import pytest

from app.agents.base import Usage
from app.config.schema import Pricing
from app.self_metrics import Observations
from app.sessions.live.usage import UsageMeter, priced

pytestmark = pytest.mark.req("R-MODEL-5")

PRICING = Pricing(input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)


def test_each_step_is_priced_and_the_turn_sums_them() -> None:
    observations = Observations()
    meter = UsageMeter("anth", "claude-x", PRICING, session_cost=1.0, observer=observations.provider_used)
    first = meter.step("s1", Usage(1_000_000, 100_000, 2_000_000, 0))
    assert first == {
        "session_id": "s1",
        "type": "usage",
        "input_tokens": 1_000_000,
        "output_tokens": 100_000,
        "cache_read_tokens": 2_000_000,
        "cache_write_tokens": 0,
        "cost_usd": pytest.approx(3.0 + 1.5 + 0.6),
        "context_tokens": 3_100_000,
        "session_cost_usd": pytest.approx(1.0 + 5.1),
    }
    meter.step("s1", Usage(0, 0, 0, 1_000_000))
    total: Any = meter.total()
    assert total == {
        "input_tokens": 1_000_000,
        "output_tokens": 100_000,
        "cache_read_tokens": 2_000_000,
        "cache_write_tokens": 1_000_000,
        "cost_usd": pytest.approx(5.1 + 3.75),
    }
    assert meter.steps == 2
    assert observations.provider_tokens[("anth", "claude-x", "input")] == 1_000_000
    assert observations.provider_tokens[("anth", "claude-x", "cache_write")] == 1_000_000
    assert observations.provider_cost[("anth", "claude-x")] == pytest.approx(8.85)


def test_an_unpriced_provider_costs_null_never_zero() -> None:
    assert priced(Pricing()) is None and priced(None) is None and priced(PRICING) is PRICING
    observations = Observations()
    meter = UsageMeter("local", None, Pricing(), observer=observations.provider_used)
    assert meter.total()["cost_usd"] is None  # even before (or without) any step
    event = meter.step("s1", Usage(5, 2))
    assert event["cost_usd"] is None and event["session_cost_usd"] is None
    assert meter.total()["cost_usd"] is None
    assert observations.provider_tokens[("local", "", "output")] == 2 and observations.provider_cost == {}


def test_a_step_whose_kind_of_token_has_no_price_makes_the_turns_cost_unknown() -> None:
    meter = UsageMeter("p", "m", Pricing(input_per_mtok=1.0, output_per_mtok=1.0))
    assert meter.step("s1", Usage(1_000_000, 0))["cost_usd"] == 1.0
    assert meter.step("s1", Usage(0, 0, 5))["cost_usd"] is None  # a cache read, and no cache price: not guessed
    assert meter.total()["cost_usd"] is None
