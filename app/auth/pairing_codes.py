"""One-time 6-digit pairing codes for `POST /pair` (R-AUTH-4, R-GW-6). Pure: no Starlette, no I/O.

A code is bound to a user when it is issued (by the daemon, or later by a local-only RPC method over the
Unix socket, where the OS vouches for the caller); `POST /pair` trades it for a paired token of that user.
A loopback TCP address proves nothing about who is asking, so there is no HTTP route that issues codes.

Guessing: a code expires after `ttl_secs` (300) and works once; at most `max_outstanding` (8) codes exist at a
time; after `max_failures` (5) wrong codes the whole gateway refuses every attempt for `lockout_secs` (300),
even a right one (429). The lockout is global, not per client address: an attacker with many addresses gets
no more guesses, and the owner can still pair over the local socket (`pairing/create`) while locked out.
"""

from __future__ import annotations

import hmac
import math
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CODE_RE", "CodeBinding", "PairingCodes", "PairingLocked", "PairingRejected"]

CODE_RE = re.compile(r"[0-9]{6}\Z")


class PairingRejected(Exception):
    """Wrong, expired, already used or malformed code (counted as a failure)."""


class PairingLocked(Exception):
    """Too many failures: every attempt is refused until the lockout ends."""

    def __init__(self, retry_after: float) -> None:
        super().__init__("pairing is locked out")
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class CodeBinding:
    user: str
    label: str | None
    expires_at: float


class PairingCodes:
    def __init__(
        self,
        *,
        ttl_secs: float = 300.0,
        max_failures: int = 5,
        lockout_secs: float = 300.0,
        max_outstanding: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_secs = ttl_secs
        self.max_failures = max_failures
        self.lockout_secs = lockout_secs
        self.max_outstanding = max_outstanding
        self._clock = clock
        self._codes: dict[str, CodeBinding] = {}
        self._failures = 0
        self._locked_until = 0.0

    def issue(self, user: str, label: str | None = None) -> str:
        """A fresh code for `user`; the oldest outstanding code is dropped beyond `max_outstanding`."""
        now = self._clock()
        self._expire(now)
        while len(self._codes) >= self.max_outstanding:
            oldest = min(self._codes, key=lambda c: self._codes[c].expires_at)
            del self._codes[oldest]
        code = f"{secrets.randbelow(1_000_000):06d}"
        while code in self._codes:
            code = f"{secrets.randbelow(1_000_000):06d}"
        self._codes[code] = CodeBinding(user, label, now + self.ttl_secs)
        return code

    def redeem(self, code: str, user: str | None = None) -> CodeBinding:
        """Consume `code` (for `user`, when the caller names one). Raises `PairingLocked` or `PairingRejected`."""
        now = self._clock()
        if now < self._locked_until:
            raise PairingLocked(self._locked_until - now)
        self._expire(now)
        found: str | None = None
        if CODE_RE.match(code):
            for candidate, binding in self._codes.items():  # compare every entry: no early exit to time
                if hmac.compare_digest(candidate, code) and (user is None or binding.user == user):
                    found = candidate
        if found is None:
            self._failures += 1
            if self._failures >= self.max_failures:
                self._failures = 0
                self._locked_until = now + self.lockout_secs
            raise PairingRejected
        self._failures = 0
        return self._codes.pop(found)

    def retry_after(self) -> int:
        """Whole seconds until the lockout ends (0 when not locked)."""
        return max(0, math.ceil(self._locked_until - self._clock()))

    @property
    def outstanding(self) -> int:
        self._expire(self._clock())
        return len(self._codes)

    def _expire(self, now: float) -> None:
        for code in [c for c, b in self._codes.items() if b.expires_at <= now]:
            del self._codes[code]
