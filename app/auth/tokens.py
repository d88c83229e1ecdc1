"""Paired tokens as the authenticator sees them: resolve at `initialize`, and a revocation check at every call.

The revocation check must be synchronous (it runs in the dispatcher's grant gate), so revocations made
through this daemon are remembered in memory; a token revoked before a restart never resolves again anyway.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from app.auth.authenticator import TokenResolver
from app.storage.errors import is_storage_unavailable

if TYPE_CHECKING:  # the store imports SQLAlchemy; the daemon may start without it (app.storage.deferred)
    from app.auth.pairing import PairingRecord, PairingStore

__all__ = ["PairedTokens"]


class PairedTokens(TokenResolver):
    def __init__(self, store: PairingStore) -> None:
        self.store = store
        self._revoked: set[str] = set()
        # SHA-256 of a token -> (token_id, user), for tokens this daemon has resolved: only consulted when storage
        # is unavailable (R-STORE-3), so a client already paired keeps reading while the disk is full.
        self._resolved: dict[str, tuple[str, str]] = {}

    async def resolve(self, token: str) -> tuple[str, str] | None:
        digest = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        try:
            record = await self.store.resolve(token)
        except Exception as exc:
            known = self._resolved.get(digest)
            # Resolving stamps `last_used_at`, a write; a refused stamp must not lock out a token already known.
            if known is None or known[0] in self._revoked or not is_storage_unavailable(exc):
                raise
            return known
        if record is None:
            self._resolved.pop(digest, None)
            return None
        self._resolved[digest] = (record.token_id, record.user)
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
            self.on_change()
        return revoked
