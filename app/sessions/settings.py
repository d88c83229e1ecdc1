"""A session's settings (R-MODEL-4): its agent, and the model and temperature its turns run with.

`session/configure` stores overrides with the session (None: the agent's own); what a turn uses, and what
`session/configure`, `session/new` and `session/list` show, is the effective value: the override, else the agent's
`model`, else its provider's (`scripted` for the offline provider), and the override temperature, else the
provider's `temperature` (None: the server's default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from app.agents.providers.models import SCRIPTED_MODEL
from app.config.schema import Config

__all__ = ["KEEP", "Keep", "SessionSettings", "effective"]


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """A session's effective settings (`session/configure`'s answer, the `config_changed` update)."""

    session_id: str
    agent_alias: str
    model: str | None
    temperature: float | None


def effective(
    config: Config, agent_alias: str, model: str | None, temperature: float | None
) -> tuple[str | None, float | None]:
    """The model and temperature a turn of `agent_alias` runs with, given the session's overrides."""
    agent = config.agents.get(agent_alias)
    provider = None if agent is None else config.providers.get(agent.provider)
    if model is None and agent is not None:
        model = agent.model
    if model is None and provider is not None:
        model = provider.model or (SCRIPTED_MODEL if provider.kind == "scripted" else None)
    if temperature is None and provider is not None:
        temperature = provider.temperature
    return model, temperature


class Keep:
    """An omitted setting: `session/configure` leaves it as it is (None would reset it to the agent's own)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = Keep()
