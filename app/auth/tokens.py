"""Paired tokens as the authenticator sees them: resolve at `initialize` and per REST request, and a revocation
check at every call.

The revocation check must be synchronous (it runs in the dispatcher's grant gate), so revocations made
through this daemon are remembered in memory; a token revoked before a restart never resolves again anyway.

One daemon owns its database (R-STORE): a token is created and revoked only through this object, so one it has
resolved stays valid until it revokes it. A token it resolved less than `recheck_secs` (60) ago is answered from
memory; otherwise the store resolves it, which stamps `last_used_at`. So `lastUsedAt` is the first use, then
correct to within a minute (as `relatime` keeps a file's access time), and a WebSocket connect or REST request
with a known token makes no database write: that write was ~14 % of the daemon's CPU under the soak kit's
WebSocket churn (benchmarks/README.md, the soak kit).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.auth.authenticator import TokenResolver
from app.storage.errors import is_storage_unavailable

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.auth.pairing import PairingRecord, PairingStore

__all__ = ["RECHECK_SECS", "PairedTokens"]

RECHECK_SECS = 60.0


class PairedTokens(TokenResolver):
    def __init__(
        self, store: PairingStore, *, recheck_secs: float = RECHECK_SECS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self._recheck_secs = recheck_secs
        self._clock = clock
        self._revoked: set[str] = set()
        # token SHA-256 -> (token_id, user, when the store last resolved it). Past `recheck_secs` the
        # store is asked again; if storage is unavailable (R-STORE-3), the entry still answers, so
        # a paired client keeps reading while the disk is full.
        self._resolved: dict[str, tuple[str, str, float]] = {}

    async def resolve(self, token: str) -> tuple[str, str] | None:
        digest = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        known = self._resolved.get(digest)
        now = self._clock()
        if known is not None and known[0] not in self._revoked and now - known[2] < self._recheck_secs:
            return known[0], known[1]
        try:
            record = await self.store.resolve(token)
        except Exception as exc:
            # Resolving stamps `last_used_at`, a write; a refused stamp must not lock out a token already known.
            if known is None or known[0] in self._revoked or not is_storage_unavailable(exc):
                raise
            return known[0], known[1]
        if record is None:
            self._resolved.pop(digest, None)
            return None
        self._resolved[digest] = (record.token_id, record.user, now)
        return record.token_id, record.user

    def is_active(self, token_id: str) -> bool:
        return token_id not in self._revoked

    async def create(self, user: str, label: str | None) -> tuple[PairingRecord, str]:
        created = await self.store.create(user, label)
        self.on_change()
        return created

    async def revoke(self, token_id: str) -> bool:
        revoked = await self.store.revoke(token_id)
        if revoked:
            self._revoked.add(token_id)
            self._resolved = {digest: known for digest, known in self._resolved.items() if known[0] != token_id}
            self.on_change()
        return revoked
