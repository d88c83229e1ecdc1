"""`models/list` and `session/configure` (R-MODEL-3, R-MODEL-4): the models an agent's provider serves, and a
session's own agent, model and temperature (`app.sessions.registry.SessionRegistry.configure`)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, UnsetType

from app.agents.providers.models import list_models
from app.config.schema import Agent
from app.sessions.errors import AgentNotAllowed, UnknownAgent
from app.sessions.settings import KEEP, SessionSettings
from rpc.core.answers import Answer, wire_model
from rpc.core.context import CallContext
from rpc.core.registry import Contract, Params, Registry, SessionId

__all__ = ["ConfigureParams", "ModelEntry", "ModelList", "ModelsParams", "SessionConfigured", "register"]

AgentAlias = Annotated[str, Meta(min_length=1, max_length=64)]
ModelId = Annotated[str, Meta(min_length=1, max_length=255)]
Temperature = Annotated[float, Meta(ge=0, le=2)]


class ModelsParams(Params, frozen=True):
    agent_alias: AgentAlias = "default"


class ConfigureParams(Params, frozen=True):
    """Each setting left out stays as it is; `model` or `temperature` null goes back to the agent's own."""

    session_id: SessionId
    agent_alias: AgentAlias | UnsetType = UNSET
    model: ModelId | UnsetType | None = UNSET
    temperature: Temperature | UnsetType | None = UNSET


class ModelEntry(Answer, frozen=True):
    """One model the provider serves; `displayName` and `contextWindow` only when the provider says."""

    id: str
    provider: str  # the `[providers.<alias>]` key
    display_name: str | UnsetType = UNSET
    context_window: int | UnsetType = UNSET


class ModelList(Answer, frozen=True):
    """The agent's provider's models (the configured one always among them) and the agent's configured model;
    `error` says why the provider could not list them (then the configured model alone is listed)."""

    models: list[ModelEntry]
    current: str | None
    error: str | UnsetType = UNSET


SessionConfigured = wire_model(
    SessionSettings, name="SessionConfigured", doc="The session's effective settings, from its next provider step."
)


def register(registry: Registry) -> None:
    listed = Contract("The models an agent's provider serves, and its configured one", ModelList, ("forbidden",))
    registry.method("models/list", params=ModelsParams, grant="sessions:read", contract=listed)(models_list)
    configured = Contract(
        "Set a session's agent, model or temperature: stored, used from its next provider step, announced as "
        "config_changed",
        SessionConfigured,
        ("forbidden", "session_not_found", "session_changed", "session_not_owned"),
        ("session/update",),
        storage=True,
    )
    registry.method("session/configure", params=ConfigureParams, grant="sessions:execute", contract=configured)(
        configure
    )


def usable_agent(ctx: CallContext, alias: str) -> Agent:
    """The agent `alias` if the caller may use it: UnknownAgent (-32602) or AgentNotAllowed (-32012)."""
    agent = ctx.services.config.agents.get(alias)
    if agent is None:
        raise UnknownAgent
    if not ctx.principal.may_use_agent(alias):
        raise AgentNotAllowed
    return agent


async def models_list(ctx: CallContext, params: ModelsParams) -> dict[str, Any]:
    agent = usable_agent(ctx, params.agent_alias)
    provider = ctx.services.config.providers.get(agent.provider)
    if provider is None:
        raise UnknownAgent(f"The agent's provider {agent.provider!r} is not configured")
    listing = await list_models(agent.provider, provider, model=agent.model)
    models = []
    for m in listing.models:
        entry: dict[str, Any] = {"id": m.id, "provider": m.provider}
        if m.display_name is not None:
            entry["displayName"] = m.display_name
        if m.context_window is not None:
            entry["contextWindow"] = m.context_window
        models.append(entry)
    result: dict[str, Any] = {"models": models, "current": listing.current}
    if listing.error is not None:
        result["error"] = listing.error
    return result


async def configure(ctx: CallContext, params: ConfigureParams) -> dict[str, Any]:
    settings = await ctx.services.sessions.configure(
        ctx.principal,
        params.session_id,
        agent_alias=None if isinstance(params.agent_alias, UnsetType) else params.agent_alias,
        model=KEEP if isinstance(params.model, UnsetType) else params.model,
        temperature=KEEP if isinstance(params.temperature, UnsetType) else params.temperature,
    )
    result: dict[str, Any] = ctx.wire(settings)
    return result
