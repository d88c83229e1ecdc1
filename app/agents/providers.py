"""`build_provider`: a `[providers.<alias>]` config entry (plus the agent's model) -> a `Provider`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from app.agents.base import Provider
    from app.config.schema import Provider as ProviderConfig

__all__ = ["build_provider"]


def build_provider(
    provider_config: ProviderConfig,
    *,
    model: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Provider:
    """Build the provider for one agent. `model` (the agent's) wins over the provider's own `model`.

    Never raises for a config that is merely incomplete (an openai provider with no model, a bad base_url):
    that surfaces as a `ProviderError` when the turn runs, so the turn ends "failed" with a sentence saying
    what to fix. `transport` is for tests (httpx.MockTransport).
    """
    if provider_config.kind == "scripted":
        from app.agents.scripted import ScriptedProvider  # made by a session's first turn, not at start-up

        return ScriptedProvider()
    if provider_config.kind == "openai":
        from app.agents.openai import OpenAIProvider  # httpx costs ~70 ms at start-up; load it when used

        key = provider_config.api_key.get_secret_value() if provider_config.api_key is not None else None
        return OpenAIProvider(
            base_url=provider_config.base_url,
            model=model or provider_config.model,
            api_key=key,
            timeout_secs=provider_config.timeout_secs,
            transport=transport,
        )
    raise ValueError(f"unknown provider kind {provider_config.kind!r}")
