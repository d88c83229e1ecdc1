"""The daemon-wide upload budget (R-FILE-4, `[limits] upload_budget_bytes`).

An upload is charged once, at `begin`, for its declared payload plus the metadata the daemon keeps for it
(session id, owner, agent, filename, declared hash, upload id, and a fixed per-upload overhead), so even an
empty upload costs something and the number of staged uploads is bounded by the budget too. The charge is
released exactly once, on commit or discard. The limit is read at every charge, so a config change applies
to the next `begin` (uploads already admitted keep their charge).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["PER_UPLOAD_OVERHEAD", "Charge", "UploadBudget", "metadata_cost"]

# One staged upload beyond its strings: bookkeeping object, hash state, index entries.
PER_UPLOAD_OVERHEAD = 512


def metadata_cost(*fields: str | None) -> int:
    """Bytes charged for the metadata kept with an upload: the fixed overhead plus each string's UTF-8 size."""
    return PER_UPLOAD_OVERHEAD + sum(len(f.encode("utf-8", "surrogatepass")) for f in fields if f)


class Charge:
    """One admitted upload's share of the budget; `release()` is idempotent."""

    __slots__ = ("_budget", "amount")

    def __init__(self, budget: UploadBudget, amount: int) -> None:
        self._budget: UploadBudget | None = budget
        self.amount = amount

    @property
    def released(self) -> bool:
        return self._budget is None

    def release(self) -> None:
        budget, self._budget = self._budget, None
        if budget is not None:
            budget._give_back(self.amount)


class UploadBudget:
    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self.used = 0

    @property
    def limit(self) -> int:
        return self._limit()

    @property
    def available(self) -> int:
        return max(0, self.limit - self.used)

    def charge(self, amount: int) -> Charge | None:
        """Take `amount` bytes, or None (nothing taken) when they do not fit."""
        if amount < 0:
            raise ValueError("a charge cannot be negative")
        if self.used + amount > self.limit:
            return None
        self.used += amount
        return Charge(self, amount)

    def _give_back(self, amount: int) -> None:
        self.used -= amount
        if self.used < 0:  # a bookkeeping bug must not turn into an ever-growing budget
            raise AssertionError("upload budget released more than it charged")
