"""The provider kinds and `build_provider`: a `[providers.<alias>]` config entry (plus the agent's model) ->
a `Provider` (R-MODEL-1). Each kind's module is imported on its first use, never at start-up: httpx and httpx-sse
cost ~70 ms and several MiB the daemon does not need until a turn talks to a remote model."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from app.agents.base import Provider
    from app.agents.providers.http import HttpProvider
    from app.config.schema import Provider as ProviderConfig

__all__ = ["KINDS", "build_provider", "remote_provider"]

# kind -> (module, class). `scripted` is the embedded offline one; the others speak HTTP (app/agents/providers/http.py).
KINDS: dict[str, tuple[str, str]] = {
    "scripted": ("app.agents.scripted", "ScriptedProvider"),
    "openai": ("app.agents.providers.openai", "OpenAIProvider"),
    "anthropic": ("app.agents.providers.anthropic", "AnthropicProvider"),
}


def _implementation(kind: str) -> Any:
    try:
        module, name = KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown provider kind {kind!r}") from None
    if "httpx" not in sys.modules:
        # httpx's `__init__` imports its command-line client (`httpx._main`: click, rich's console, pygments) when
        # they are installed, as they are here: ~40 ms and ~5.5 MiB of a provider's first use, for a CLI the daemon
        # never runs. A None entry in sys.modules makes that import raise ImportError, which httpx falls back on.
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    return getattr(importlib.import_module(module), name)


def remote_provider(
    provider_config: ProviderConfig,
    *,
    alias: str | None = None,
    model: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> HttpProvider:
    """The HTTP provider of a remote kind (`openai`, `anthropic`); ValueError for `scripted` or an unknown kind."""
    if provider_config.kind == "scripted":
        raise ValueError("the scripted provider is not a remote one")
    cls = _implementation(provider_config.kind)
    key = provider_config.api_key.get_secret_value() if provider_config.api_key is not None else None
    built: HttpProvider = cls(
        base_url=provider_config.base_url,
        model=model or provider_config.model,
        api_key=key,
        api_key_env=provider_config.api_key_env,
        alias=alias,
        timeout_secs=provider_config.timeout_secs,
        max_retries=provider_config.max_retries,
        max_tokens=provider_config.max_tokens,
        temperature=provider_config.temperature,
        headers=provider_config.headers,
        transport=transport,
    )
    return built


def build_provider(
    provider_config: ProviderConfig,
    *,
    model: str | None = None,
    alias: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Provider:
    """Build the provider for one agent. `model` (the agent's) wins over the provider's own `model`; `alias` (the
    `[providers.<alias>]` key) names the provider in failure sentences (R-MODEL-2).

    Never raises for a config that is merely incomplete (a remote provider with no model, a bad base_url, an unset
    `api_key_env` variable): that surfaces as a `ProviderError` when the turn runs, so the turn ends "failed" with a
    sentence saying what to fix. `transport` is for tests (httpx.MockTransport).
    """
    if provider_config.kind == "scripted":
        cls = _implementation("scripted")
        scripted: Provider = cls()
        return scripted
    return remote_provider(provider_config, alias=alias, model=model, transport=transport)
