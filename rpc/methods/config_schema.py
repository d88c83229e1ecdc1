"""`config/sections`, `config/list`, `config/map-keys`, `config/templates` (R-ZC-4): the config schema described
for a settings screen, as a terminal client reads it on start (`app.config.sections`; docs/config.md)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from app.config import sections
from app.config.props import MAX_PROP_CHARS
from rpc.core.answers import Answer, wire_model
from rpc.core.context import CallContext
from rpc.core.registry import Contract, NoParams, Params, Registry

__all__ = ["register"]

ConfigSection = wire_model(sections.ConfigSection, doc="One top-level config section, for a settings screen.")
ConfigFieldEntry = wire_model(sections.ConfigFieldEntry, doc="One leaf of the config schema and its value.")
ConfigTemplate = wire_model(sections.ConfigTemplate, doc="One map section of the config, for adding entries.")


class ConfigSections(Answer, frozen=True):
    sections: list[ConfigSection]  # type: ignore[valid-type]


class ConfigEntries(Answer, frozen=True):
    entries: list[ConfigFieldEntry]  # type: ignore[valid-type]


class ConfigMapKeys(Answer, frozen=True):
    path: str
    keys: list[str]


class ConfigTemplates(Answer, frozen=True):
    templates: list[ConfigTemplate]  # type: ignore[valid-type]


class ListParams(Params, frozen=True):
    # A dotted path or its start at a `.` (`agents`, `limits.max_sessions`); none = all.
    prefix: Annotated[str, Meta(max_length=MAX_PROP_CHARS)] | None = None


class MapKeysParams(Params, frozen=True):
    path: Annotated[str, Meta(min_length=1, max_length=MAX_PROP_CHARS)]


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    described = c("The config's sections, for a settings screen", ConfigSections)
    method("config/sections", params=NoParams, grant="config:read", contract=described)(config_sections)
    listed = c("The config's leaves and their values (secrets masked)", ConfigEntries)
    method("config/list", params=ListParams, grant="config:read", contract=listed)(config_list)
    keys = c("The entry names of one map section of the config", ConfigMapKeys)
    method("config/map-keys", params=MapKeysParams, grant="config:read", contract=keys)(config_map_keys)
    templates = c("The config's map sections, for adding an entry", ConfigTemplates)
    method("config/templates", params=NoParams, grant="config:read", contract=templates)(config_templates)


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
