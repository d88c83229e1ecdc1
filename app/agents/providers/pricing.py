"""What a provider step cost (R-MODEL-5): its `Usage` priced by `[providers.<p>.pricing]`, USD per million tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agents.base import Usage
    from app.config.schema import Pricing

__all__ = ["cost_usd"]


def cost_usd(usage: Usage, pricing: Pricing | None) -> float | None:
    """The cost of `usage` in USD, or None when it is unpriced: no pricing table, or a count above zero whose price
    is not set (a cache price is not guessed from the input price: providers charge cache reads and writes at their
    own rates)."""
    if pricing is None:
        return None
    total = 0.0
    for count, price in (
        (usage.input_tokens, pricing.input_per_mtok),
        (usage.output_tokens, pricing.output_per_mtok),
        (usage.cache_read_tokens, pricing.cache_read_per_mtok),
        (usage.cache_write_tokens, pricing.cache_write_per_mtok),
    ):
        if count:
            if price is None:
                return None
            total += count * price
    return total / 1_000_000
