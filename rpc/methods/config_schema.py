"""`config/sections`, `config/list`, `config/map-keys`, `config/templates` (R-ZC-4): the config schema described
for a settings screen, as zerocode reads it on start (`app.config.sections`; docs/config.md)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from app.config import sections
from app.config.props import MAX_PROP_CHARS
from rpc.core.context import CallContext
from rpc.core.registry import NoParams, Params, Registry

__all__ = ["register"]


class ListParams(Params, frozen=True):
    # A dotted path or its start at a `.` (`agents`, `limits.max_sessions`); none = all.
    prefix: Annotated[str, Meta(max_length=MAX_PROP_CHARS)] | None = None


class MapKeysParams(Params, frozen=True):
    path: Annotated[str, Meta(min_length=1, max_length=MAX_PROP_CHARS)]


def register(registry: Registry) -> None:
    registry.method("config/sections", params=NoParams, grant="config:read")(config_sections)
    registry.method("config/list", params=ListParams, grant="config:read")(config_list)
    registry.method("config/map-keys", params=MapKeysParams, grant="config:read")(config_map_keys)
    registry.method("config/templates", params=NoParams, grant="config:read")(config_templates)


def config_sections(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    store = ctx.services.config_store
    return {"sections": ctx.wire(sections.sections(store.current, store.written()))}


def config_list(ctx: CallContext, params: ListParams) -> dict[str, Any]:
    store = ctx.services.config_store
    return {"entries": ctx.wire(sections.field_entries(store.current, store.written(), params.prefix))}


def config_map_keys(ctx: CallContext, params: MapKeysParams) -> dict[str, Any]:
    # An unknown path is `UnknownProp` (-32602, mapped in `rpc.methods.config`), as in ZeroClaw.
    return {"path": params.path, "keys": sections.map_keys(ctx.services.config_store.current, params.path)}


def config_templates(ctx: CallContext, params: NoParams) -> dict[str, Any]:
    return {"templates": ctx.wire(sections.templates())}
