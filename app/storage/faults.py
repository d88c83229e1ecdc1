"""Storage fault injection: make the next N operations at a named point fail inside their transaction.

A test (or an e2e daemon, via `ZEROCLAW_FAULTS="save_snapshot:1,kill:1"`) arms a point; the store calls
`faults.check(point)` after it has issued its writes but before the commit, so the failure rolls back a real
transaction instead of skipping one. That is what R-ACP-2 and R-ACP-11 are about: a write that failed must leave
the previous durable state exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from sqlalchemy.exc import SQLAlchemyError

__all__ = ["ENV_VAR", "FAULT_POINTS", "Faults", "StorageFault", "parse"]

ENV_VAR = "ZEROCLAW_FAULTS"

# Every point the session store checks. An unknown name is an error: a typo would arm nothing
# and let a test pass for the wrong reason.
FAULT_POINTS = frozenset(
    {
        "fork",
        "rollback",
        "create",
        "reopen",
        "append",
        "update_text",
        "save_snapshot",
        "finish_turn",
        "store_seq",
        "recover",
        "touch",
        "close",
        "kill",
        "delete",
        "record_usage",
    }
)


class StorageFault(SQLAlchemyError):
    """An injected failure. A SQLAlchemyError, so callers handle it exactly like a real database error."""

    def __init__(self, point: str) -> None:
        super().__init__(f"injected storage fault at {point!r}")
        self.point = point


class Faults:
    """Counters per point; `check` consumes one and raises. Single event loop, so no lock is needed."""

    def __init__(self, armed: Mapping[str, int] | None = None) -> None:
        self._armed: dict[str, int] = {}
        for point, count in (armed or {}).items():
            self.arm(point, count)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Faults:
        """Parse `ZEROCLAW_FAULTS` (`point:count,point`; a bare point means 1). Unset or empty arms nothing."""
        env = os.environ if environ is None else environ
        return cls(parse(env.get(ENV_VAR, "")))

    def arm(self, point: str, count: int = 1) -> None:
        if point not in FAULT_POINTS:
            raise ValueError(f"unknown fault point {point!r}; known: {', '.join(sorted(FAULT_POINTS))}")
        if count < 0:
            raise ValueError(f"fault count must be >= 0, got {count}")
        if count:
            self._armed[point] = self._armed.get(point, 0) + count
        else:
            self._armed.pop(point, None)

    def disarm(self, points: Iterable[str] | None = None) -> None:
        for point in list(self._armed) if points is None else points:
            self._armed.pop(point, None)

    def pending(self, point: str) -> int:
        return self._armed.get(point, 0)

    def check(self, point: str) -> None:
        """Raise `StorageFault` if `point` is armed, consuming one count."""
        left = self._armed.get(point, 0)
        if not left:
            return
        if left == 1:
            del self._armed[point]
        else:
            self._armed[point] = left - 1
        raise StorageFault(point)

    def __repr__(self) -> str:
        return f"Faults({self._armed!r})"


def parse(spec: str) -> dict[str, int]:
    """`"save_snapshot:1, kill:2"` -> {"save_snapshot": 1, "kill": 2}; repeated points add up."""
    armed: dict[str, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        point, sep, raw = item.partition(":")
        point = point.strip()
        try:
            count = int(raw) if sep else 1
        except ValueError:
            raise ValueError(f"{ENV_VAR}: bad count in {item!r}") from None
        if point not in FAULT_POINTS or count < 0:
            raise ValueError(f"{ENV_VAR}: bad entry {item!r}; known points: {', '.join(sorted(FAULT_POINTS))}")
        armed[point] = armed.get(point, 0) + count
    return armed
