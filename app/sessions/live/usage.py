"""What a turn's provider steps cost (R-MODEL-5): each step's `Usage` priced, sent as a `usage` update, summed for
`turn_complete.usage` and the turn's stored row, and told to the daemon's counters (`GET /metrics`).

Once per provider step, never per chunk: a step's `Usage` is one event at its end (`app.agents.base.Usage`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.agents.providers.pricing import cost_usd

if TYPE_CHECKING:
    from app.agents.base import Usage
    from app.config.schema import Pricing
    from app.sessions.events import UsageEvent, UsageSum

__all__ = ["UsageMeter", "UsageObserver", "priced"]

# (provider alias, model, the step's usage, its cost or None): the daemon's `zeroclaw_provider_*` counters.
UsageObserver = Callable[[str, str, "Usage", "float | None"], None]


def priced(pricing: Pricing | None) -> Pricing | None:
    """`pricing` when it sets any price, else None: a provider with no `[providers.<p>.pricing]` is unpriced, and
    its turns cost null (not 0), even one that used no tokens."""
    if pricing is None:
        return None
    prices = (pricing.input_per_mtok, pricing.output_per_mtok, pricing.cache_read_per_mtok)
    return pricing if any(price is not None for price in (*prices, pricing.cache_write_per_mtok)) else None


class UsageMeter:
    """One turn's usage: `step` for each provider step's `Usage`, `total` for the sum.

    `session_cost` is what the session's earlier turns cost (None: unknown or unpriced); ACP's `usage_update` shows
    the session's running cost, so each step's event carries it too.
    """

    __slots__ = (
        "cache_read",
        "cache_write",
        "cost",
        "input",
        "model",
        "observer",
        "output",
        "pricing",
        "provider",
        "session_cost",
        "steps",
    )

    def __init__(
        self,
        provider: str,
        model: str | None,
        pricing: Pricing | None,
        *,
        session_cost: float | None = None,
        observer: UsageObserver | None = None,
    ) -> None:
        self.provider, self.model, self.pricing = provider, model, priced(pricing)
        self.session_cost, self.observer = session_cost, observer
        self.steps = self.input = self.output = self.cache_read = self.cache_write = 0
        self.cost: float | None = None if self.pricing is None else 0.0

    def step(self, session_id: str, usage: Usage) -> UsageEvent:
        """Count one provider step; its `usage` update."""
        cost = cost_usd(usage, self.pricing)
        self.steps += 1
        self.input += usage.input_tokens
        self.output += usage.output_tokens
        self.cache_read += usage.cache_read_tokens
        self.cache_write += usage.cache_write_tokens
        # A step that could not be priced makes the turn's cost unknown, not smaller.
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        if cost is not None:
            self.session_cost = (self.session_cost or 0.0) + cost
        if self.observer is not None:
            self.observer(self.provider, self.model or "", usage, cost)
        context = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
        return {
            "session_id": session_id,
            "type": "usage",
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "cost_usd": cost,
            "context_tokens": context,
            "session_cost_usd": self.session_cost,
        }

    def total(self) -> UsageSum:
        """The turn's steps summed (`turn_complete.usage`)."""
        return {
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "cost_usd": self.cost,
        }
