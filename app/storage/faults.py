"""Storage fault injection: make the next N operations at a named point fail inside their transaction.

A test (or an e2e daemon, via `ZEROCLAW_FAULTS="save_snapshot:1,kill:1"`) arms a point; the store calls
`faults.check(point)` after it has issued its writes but before the commit, so the failure rolls back a real
transaction instead of skipping one. That is what R-ACP-2 and R-ACP-11 are about: a write that failed must leave
the previous durable state exactly as it was.

`point:stall` instead makes the first operation at the point stop there, inside its open transaction (its writes
issued, not committed), after logging `storage fault: stalled at 'point'`: an e2e test waits for that line and
SIGKILLs the daemon, which is a kill *during* the write, every time (R-BRANCH-6).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping

from sqlalchemy.exc import SQLAlchemyError

__all__ = ["ENV_VAR", "FAULT_POINTS", "STALL", "Faults", "StorageFault", "parse", "parse_stalls"]

ENV_VAR = "ZEROCLAW_FAULTS"
STALL = "stall"  # `point:stall`: stop inside the transaction until the process is killed

log = logging.getLogger("zeroclaw.storage")

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

    def __init__(self, armed: Mapping[str, int] | None = None, *, stalls: Iterable[str] = ()) -> None:
        self._armed: dict[str, int] = {}
        for point, count in (armed or {}).items():
            self.arm(point, count)
        self._stalls = set(stalls)
        if unknown := self._stalls - FAULT_POINTS:
            raise ValueError(f"unknown fault point {sorted(unknown)[0]!r}; known: {', '.join(sorted(FAULT_POINTS))}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Faults:
        """Parse `ZEROCLAW_FAULTS` (`point:count,point,point:stall`; a bare point means 1). Unset or empty arms
        nothing."""
        spec = (os.environ if environ is None else environ).get(ENV_VAR, "")
        return cls(parse(spec), stalls=parse_stalls(spec))

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
        """Raise `StorageFault` if `point` is armed, consuming one count; stall for good if it is to stall."""
        if point in self._stalls:
            self._stalls.discard(point)
            log.warning("storage fault: stalled at %r", point)
            threading.Event().wait()  # until the test SIGKILLs the process, inside the open transaction
        left = self._armed.get(point, 0)
        if not left:
            return
        if left == 1:
            del self._armed[point]
        else:
            self._armed[point] = left - 1
        raise StorageFault(point)

    def __repr__(self) -> str:
        return f"Faults({self._armed!r}, stalls={sorted(self._stalls)!r})"


def parse(spec: str) -> dict[str, int]:
    """`"save_snapshot:1, kill:2"` -> {"save_snapshot": 1, "kill": 2}; repeated points add up."""
    armed: dict[str, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        point, sep, raw = item.partition(":")
        point = point.strip()
        if raw.strip() == STALL and point in FAULT_POINTS:
            continue  # `parse_stalls`
        try:
            count = int(raw) if sep else 1
        except ValueError:
            raise ValueError(f"{ENV_VAR}: bad count in {item!r}") from None
        if point not in FAULT_POINTS or count < 0:
            raise ValueError(f"{ENV_VAR}: bad entry {item!r}; known points: {', '.join(sorted(FAULT_POINTS))}")
        armed[point] = armed.get(point, 0) + count
    return armed


def parse_stalls(spec: str) -> frozenset[str]:
    """The points of `ZEROCLAW_FAULTS` given as `point:stall` (`parse` checks the rest)."""
    found = (item.partition(":") for item in spec.split(","))
    return frozenset(point.strip() for point, _sep, raw in found if raw.strip() == STALL and point.strip())
