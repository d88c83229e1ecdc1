"""Pairing tokens (R-AUTH-4): issue, list, revoke and resolve bearer tokens bound to a user.

A token is `zc_` + 64 hex digits, shown once at creation; the database keeps only its SHA-256, so a leaked
database file pairs nobody. The hash is the lookup key: the presented secret is never compared byte by byte
against stored secrets, and the final equality check is constant-time anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from app.storage.database import Database
from app.storage.models import PairingToken
from app.storage.types import iso_z, utcnow

__all__ = ["TOKEN_ID_RE", "TOKEN_RE", "PairingRecord", "PairingStore", "iso_z"]

TOKEN_RE = re.compile(r"^zc_[0-9a-f]{64}\Z")
TOKEN_ID_RE = re.compile(r"^tok_[0-9a-f]{12}\Z")


@dataclass(frozen=True, slots=True)
class PairingRecord:
    """A paired token as callers may see it: never the token or its hash."""

    token_id: str
    user: str
    label: str | None
    created_at: datetime
    last_used_at: datetime | None

    @classmethod
    def _from_row(cls, row: PairingToken) -> PairingRecord:
        return cls(row.token_id, row.user, row.label, row.created_at, row.last_used_at)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


class PairingStore:
    """Pairing tokens over a `Database`.

    `generation` grows after every committed create or effective revoke, so the authorization gate can cache
    resolved principals and re-check them only when it changes.
    """

    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._clock = clock
        self.generation = 0

    async def create(self, user: str, label: str | None = None) -> tuple[PairingRecord, str]:
        """A new token for `user`; the returned plain token exists nowhere else."""
        token = "zc_" + secrets.token_hex(32)
        row = PairingToken(
            token_id="tok_" + secrets.token_hex(6),
            user=user,
            label=label,
            token_sha256=_digest(token),
            created_at=self._clock(),
        )
        await self._db.write(Session.add, row)
        self.generation += 1  # after commit: a gate that sees the bump also sees the row
        return PairingRecord._from_row(row), token

    async def list_active(self, user: str | None = None) -> list[PairingRecord]:
        """Unrevoked tokens, oldest first; only `user`'s when given."""
        query = select(PairingToken).where(PairingToken.revoked_at.is_(None))
        if user is not None:
            query = query.where(PairingToken.user == user)
        query = query.order_by(PairingToken.created_at, PairingToken.token_id)

        def unit(session: Session) -> list[PairingRecord]:
            return [PairingRecord._from_row(row) for row in session.scalars(query)]

        return await self._db.read(unit)

    async def revoke(self, token_id: str) -> bool:
        """Revoke an active token; False if it is unknown or already revoked (then nothing changes)."""
        query = (
            update(PairingToken)
            .where(PairingToken.token_id == token_id, PairingToken.revoked_at.is_(None))
            .values(revoked_at=self._clock())
        )

        def unit(session: Session) -> bool:
            return cast("CursorResult[Any]", session.execute(query)).rowcount == 1

        revoked = await self._db.write(unit)
        if revoked:
            self.generation += 1
        return revoked

    async def resolve(self, token: str) -> PairingRecord | None:
        """The active record for a presented token, stamping `last_used_at`; None if unknown or revoked."""
        if not TOKEN_RE.match(token):
            return None  # garbage never reaches the database
        digest = _digest(token)
        query = select(PairingToken).where(PairingToken.token_sha256 == digest, PairingToken.revoked_at.is_(None))
        now = self._clock()

        def unit(session: Session) -> PairingRecord | None:
            row = session.scalars(query).one_or_none()
            if row is None or not hmac.compare_digest(row.token_sha256, digest):
                return None
            row.last_used_at = now
            return PairingRecord._from_row(row)

        return await self._db.write(unit)
