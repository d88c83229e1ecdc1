"""Paired tokens as the authenticator sees them: resolve at `initialize`, and a revocation check at every call.

The revocation check must be synchronous (it runs in the dispatcher's grant gate), so revocations made
through this daemon are remembered in memory; a token revoked before a restart never resolves again anyway.
"""

from __future__ import annotations

from app.auth.authenticator import TokenResolver
from app.auth.pairing import PairingRecord, PairingStore

__all__ = ["PairedTokens"]


class PairedTokens(TokenResolver):
    def __init__(self, store: PairingStore) -> None:
        self.store = store
        self._revoked: set[str] = set()

    async def resolve(self, token: str) -> tuple[str, str] | None:
        record = await self.store.resolve(token)
        return None if record is None else (record.token_id, record.user)

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
