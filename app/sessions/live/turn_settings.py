"""What a turn runs with (`TurnSettings`) and where its `session/update` events go (`Updates`): the seams that the
turn (turn.py) and its tool guard (guard.py) share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.agents.base import ToolContext
    from app.agents.permissions import RuleBook, RuleSet
    from app.sessions.events import SessionEvent

__all__ = ["TurnSettings", "Updates"]


class Updates(Protocol):
    """Where the turn's `session/update` events go (`app.sessions.live.updates.TurnUpdates`)."""

    async def emit(self, event: SessionEvent) -> None: ...

    async def text(self, chunks: Sequence[str]) -> None:
        """One `agent_message_chunk` per chunk, in order."""
        ...


@dataclass(frozen=True, slots=True)
class TurnSettings:
    """What a turn runs with, read from the agent's config when it starts."""

    max_steps: int
    system_prompt: str | None
    auto_approve: frozenset[str]
    approval_timeout_secs: float
    tool_context: ToolContext
    # Config, `auto_approve` and remembered rules for this owner and agent (R-GUARD-1); None: tool defaults only.
    rules: RuleSet | None = None
    rule_book: RuleBook | None = None  # where `allow_always` with `remember:"agent"` is stored
