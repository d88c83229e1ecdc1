"""All mapped tables. Importing this package registers every model on `Base.metadata` (Alembic relies on it).

A new table gets its own module here, an import below, and a migration in `migrations/versions/`.
"""

from __future__ import annotations

from app.storage.models.base import Base
from app.storage.models.pairing import PairingToken
from app.storage.models.permissions import PermissionRule
from app.storage.models.sessions import (
    AcpSession,
    AcpSnapshot,
    AcpTranscriptRow,
    AcpTurn,
    AcpTurnUsage,
    ChatMessage,
    ChatSession,
    ChatSnapshot,
    ChatTurnUsage,
)

__all__ = [
    "AcpSession",
    "AcpSnapshot",
    "AcpTranscriptRow",
    "AcpTurn",
    "AcpTurnUsage",
    "Base",
    "ChatMessage",
    "ChatSession",
    "ChatSnapshot",
    "ChatTurnUsage",
    "PairingToken",
    "PermissionRule",
]
