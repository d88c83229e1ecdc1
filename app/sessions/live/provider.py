"""The provider a session's turn talks to, following the session's settings (R-MODEL-4).

`session/configure` may change a session's model or temperature while a turn runs; it applies from the next
provider step. `SessionProvider` builds the provider for the settings in force at each step (`build_provider` with
the session's model and a copy of the provider config with its temperature), again only when they changed.
Anything else asked of it is the current provider's (`model`, `alias`, ...).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from msgspec.structs import replace

from app.agents.base import Message, Provider, ProviderEvent, ToolSpec
from app.agents.providers import build_provider
from app.config.schema import Agent
from app.config.schema import Provider as ProviderConfig
from app.sessions.live.session import LiveSession

__all__ = ["SessionProvider"]


class SessionProvider:
    """A `Provider` for the turns of `live` as agent `agent` (whose provider is `provider_config`, `alias`)."""

    def __init__(self, live: LiveSession, agent: Agent, provider_config: ProviderConfig) -> None:
        self._live = live
        self._agent = agent
        self._config = provider_config
        self._key: tuple[str | None, float | None] | None = None
        self._provider: Provider | None = None

    def current(self) -> Provider:
        """The provider for the session's settings now."""
        live = self._live
        key = (live.model, live.temperature)
        if self._provider is None or key != self._key:
            config = self._config
            if live.temperature is not None:
                config = replace(config, temperature=live.temperature)
            model = live.model or self._agent.model
            self._provider, self._key = build_provider(config, model=model, alias=self._agent.provider), key
        return self._provider

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ProviderEvent]:
        """One step, on the provider of the settings in force now."""
        stream: Any = self.current().stream
        result: AsyncIterator[ProviderEvent] = stream(messages, tools, *args, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)
