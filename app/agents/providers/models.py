"""`list_models`: the models a provider serves (R-MODEL-3), from its own `GET /v1/models` (both API kinds serve
it), cached per provider for `[providers.<p>] models_ttl_secs` (300), always including the configured model. A
provider that cannot list gives the configured model alone and `error`, a sentence saying why; a failure is not
cached, so the next call asks again. The `models/list` RPC method is built on this."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.agents.base import ProviderError

if TYPE_CHECKING:
    import httpx

    from app.agents.providers.http import ModelInfo
    from app.config.schema import Provider as ProviderConfig

__all__ = ["ModelListing", "clear_cache", "list_models"]

SCRIPTED_MODEL = "scripted"


@dataclass(frozen=True, slots=True)
class ModelListing:
    models: tuple[ModelInfo, ...]
    current: str | None  # the configured model (the agent's, else the provider's)
    error: str | None = None


# (alias, kind, base_url, model-independent settings) -> (expires at, models listed)
_cache: dict[tuple[object, ...], tuple[float, tuple[ModelInfo, ...]]] = {}


def clear_cache() -> None:
    _cache.clear()


def _with_current(models: tuple[ModelInfo, ...], current: str | None, alias: str) -> tuple[ModelInfo, ...]:
    if current is None or any(m.id == current for m in models):
        return models
    from app.agents.providers.http import ModelInfo

    return (ModelInfo(id=current, provider=alias), *models)


async def list_models(
    alias: str,
    provider_config: ProviderConfig,
    *,
    model: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    now: float | None = None,
) -> ModelListing:
    """The models of provider `alias`; `model` (an agent's) is the current one when given, else the provider's."""
    current = model or provider_config.model
    if provider_config.kind == "scripted":
        from app.agents.providers.http import ModelInfo

        return ModelListing((ModelInfo(id=SCRIPTED_MODEL, provider=alias),), current or SCRIPTED_MODEL)
    from app.agents.providers.table import remote_provider

    provider = remote_provider(provider_config, alias=alias, model=current, transport=transport)
    key = provider_config.api_key.get_secret_value() if provider_config.api_key is not None else None
    cache_key = (alias, provider_config.kind, provider.base_url, key, provider_config.api_key_env)
    clock = time.monotonic() if now is None else now
    cached = _cache.get(cache_key)
    if cached is not None and cached[0] > clock:
        return ModelListing(_with_current(cached[1], current, alias), current)
    try:
        listed = tuple(await provider.fetch_models())
    except ProviderError as exc:
        return ModelListing(_with_current((), current, alias), current, str(exc))
    if provider_config.models_ttl_secs > 0:
        _cache[cache_key] = (clock + provider_config.models_ttl_secs, listed)
    return ModelListing(_with_current(listed, current, alias), current)
