"""What kind of session it is: durable (SPEC's "ACP session") or chat. The code says which; the wire and the
database keep their spelling (`"acp"`, `"chat"`), which is each member's value."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

__all__ = ["EITHER", "MODES", "SessionMode", "WireMode", "on_wire"]


class SessionMode(StrEnum):
    """A session's mode. A member equals its wire spelling (`SessionMode.DURABLE == "acp"`), so values read from
    the wire or the database compare and hash as the member they name."""

    DURABLE = "acp"  # turns recorded and recovered after a crash (R-ACP-5, 8); rehydrated by a prompt
    CHAT = "chat"  # a conversation without turn records; comes back only when opened or attached again


MODES: Final = frozenset(SessionMode)
# The modes a stored session is looked for in, durable first (`session/attach`, `session/messages`).
EITHER: Final = (SessionMode.DURABLE, SessionMode.CHAT)

# How the wire spells a mode in answers: the contract (OpenRPC, OpenAPI) lists the two strings, not an enum.
WireMode = Literal["acp", "chat"]


def on_wire(mode: SessionMode) -> WireMode:
    """`mode` as the wire spells it."""
    return "acp" if mode == SessionMode.DURABLE else "chat"
