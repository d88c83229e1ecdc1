"""`config/get`, `config/set`, `config/delete`, `config/set-many` (R-CFG-1..4) over `app.config.store`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from msgspec import Meta

from app.auth import policy
from app.config import errors as config_errors
from app.config.props import MAX_PROP_CHARS
from rpc.core.answers import TRUE, Answer
from rpc.core.context import CallContext
from rpc.core.errors import Forbidden, InternalError, InvalidParams, RpcError, error_mapper
from rpc.core.registry import Contract, Params, Registry

__all__ = ["ConfigProp", "ConfigSet", "map_config_error", "register"]

Prop = Annotated[str, Meta(min_length=1, max_length=MAX_PROP_CHARS)]  # the one limit, as the store checks it


class GetParams(Params, frozen=True):
    prop: Prop | None = None


class SetParams(Params, frozen=True):
    prop: Prop
    value: Any


class DeleteParams(Params, frozen=True):
    prop: Prop


class SetManyParams(Params, frozen=True):
    # Entries stay raw: the store validates each one so its errors can name the entry's index (R-CFG-2).
    sets: Any


class ConfigProp(Answer, frozen=True):
    """`config/get {prop}` (and `GET /api/config?prop=P`): the property's masked value (any JSON)."""

    prop: str
    value: Any


class ConfigSet(Answer, frozen=True):
    prop: str
    set: TRUE


class ConfigDeleted(Answer, frozen=True):
    prop: str
    deleted: TRUE


class ConfigSetMany(Answer, frozen=True):
    props: list[str]  # in request order, without duplicates
    set: TRUE


def _config_get_result() -> tuple[Any, ...]:
    from app.config.schema import Config

    return (Config, ConfigProp)  # the whole config, or {prop, value} with `prop`


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    got = c("The config with secrets masked, or one property's value", _config_get_result)
    method("config/get", params=GetParams, grant="config:read", contract=got)(get)
    was_set = c("Set one config property (written to config.toml atomically)", ConfigSet)
    method("config/set", params=SetParams, grant="config:update", contract=was_set)(set_)
    deleted = c("Remove one config property (back to its default)", ConfigDeleted)
    method("config/delete", params=DeleteParams, grant="config:update", contract=deleted)(delete)
    all_set = c("Set several config properties in one commit", ConfigSetMany)
    method("config/set-many", params=SetManyParams, grant="config:update", contract=all_set)(set_many)


def _forbidden(exc: policy.Forbidden) -> RpcError:
    data: dict[str, Any] = {
        k: v for k, v in (("grant", exc.grant), ("prop", exc.prop), ("index", exc.index)) if v is not None
    }
    if exc.agent:
        data["agent"] = True
    return Forbidden(exc.message, **data)


def _invalid_config(exc: config_errors.InvalidConfigRequest) -> RpcError:
    data: dict[str, Any] = {"errors": list(exc.errors)}
    if exc.index is not None:
        data["index"] = exc.index
    if exc.prop is not None:
        data["prop"] = exc.prop
    return InvalidParams(exc.message, **data)


# The policy's `Forbidden` is mapped here, where write paths are checked; it covers every domain
# denial (`AgentNotAllowed` from sessions and files included). One entry per concept.
map_config_error = error_mapper(
    {
        policy.Forbidden: _forbidden,
        config_errors.InvalidConfigRequest: _invalid_config,
        config_errors.ConfigWriteError: lambda exc: InternalError(exc.message, kind="internal_error", reason=exc.kind),
    }
)


def _authorizer(ctx: CallContext, *, indexed: bool) -> Callable[[Sequence[str]], None]:
    def authorize(props: Sequence[str]) -> None:
        # Runs under the config write lock: the grant and the paths are judged by the policy in force now,
        # so a revocation that landed while this request waited for the lock rejects it (R-CFG-3).
        principal = ctx.recheck("config:update")
        policy.check_config_write(principal, props, indexed=indexed)

    return authorize


def get(ctx: CallContext, params: GetParams) -> Any:
    store = ctx.services.config_store
    if params.prop is None:
        return store.get()
    return {"prop": params.prop, "value": store.get(params.prop)}


async def set_(ctx: CallContext, params: SetParams) -> dict[str, Any]:
    await ctx.services.config_store.set(params.prop, params.value, authorize=_authorizer(ctx, indexed=False))
    return {"prop": params.prop, "set": True}


async def delete(ctx: CallContext, params: DeleteParams) -> dict[str, Any]:
    await ctx.services.config_store.delete(params.prop, authorize=_authorizer(ctx, indexed=False))
    return {"prop": params.prop, "deleted": True}


async def set_many(ctx: CallContext, params: SetManyParams) -> dict[str, Any]:
    props = await ctx.services.config_store.set_many(params.sets, authorize=_authorizer(ctx, indexed=True))
    return {"props": props, "set": True}
