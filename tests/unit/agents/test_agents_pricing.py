"""The cost of a provider step from `[providers.<p>.pricing]` (R-MODEL-5)."""

from __future__ import annotations

import msgspec
import pytest

from app.agents.base import Usage
from app.agents.providers.pricing import cost_usd
from app.config.schema import Pricing, Provider

pytestmark = pytest.mark.req("R-MODEL-5")

SONNET = Pricing(input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)


def test_each_count_at_its_own_price() -> None:
    usage = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=10_000, cache_write_tokens=2000)
    assert cost_usd(usage, SONNET) == pytest.approx((1000 * 3 + 200 * 15 + 10_000 * 0.3 + 2000 * 3.75) / 1e6)
    assert cost_usd(Usage(), SONNET) == 0.0


def test_unpriced_is_none() -> None:
    assert cost_usd(Usage(5, 5), None) is None
    assert cost_usd(Usage(5, 5), Pricing()) is None  # the default: nothing priced
    assert Provider().pricing == Pricing()
    partial = Pricing(input_per_mtok=1.0, output_per_mtok=2.0)
    assert cost_usd(Usage(1_000_000, 1_000_000), partial) == 3.0
    assert cost_usd(Usage(1, 1, cache_read_tokens=1), partial) is None  # a cache price is not guessed


def test_the_pricing_table_in_config() -> None:
    data = {"kind": "anthropic", "model": "m", "pricing": {"input_per_mtok": 3, "output_per_mtok": 15}}
    provider = msgspec.convert(data, Provider)
    assert provider.pricing == Pricing(input_per_mtok=3.0, output_per_mtok=15.0)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"pricing": {"input_per_mtok": -1}}, Provider)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"pricing": {"input_per_million": 1}}, Provider)
