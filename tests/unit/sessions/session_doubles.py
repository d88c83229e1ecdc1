"""What the registry tests hand a session in place of a connection: a client that cannot answer questions and a
sink that keeps the updates it is sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.agents.base import Elicitation
from app.auth.policy import Principal

ALICE = Principal(id="alice", admin=False, agents=frozenset({"*"}))


class NoClient:
    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        return Elicitation("unavailable", reason="no client in this test")


@dataclass(eq=False)
class Sink:
    """A follower of a session: every update it is sent, in order."""

    principal_id: str | None = "alice"
    updates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return False

    async def send_updates(self, updates: Sequence[dict[str, Any]], frames: Sequence[bytes] | None = None) -> None:
        self.updates += updates

    def drop(self) -> None:
        pass

    def types(self) -> list[str]:
        return [u["type"] for u in self.updates]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["type"] == kind]
