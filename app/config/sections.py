"""The config schema described for a settings screen (R-ZC-4): `config/sections`, `config/list`, `config/map-keys`,
`config/templates`.

Everything here is read from the schema (`app.config.schema.Config`) and the live config, so a section or key added
to the schema shows up without an edit here. The field names of these values are ZeroClaw 0.8.4's own
(`crates/zeroclaw-config/src/traits.rs` `ConfigFieldEntry`, `MapKeySection`; `rpc/types.rs` `ConfigSectionEntry`),
so the zerocode dialect shows them as they are and the standard one in camelCase (`rpc.core.wire`). Values are the
masked JSON `config/get` shows (`app.config.props.masked`): a set secret reads `"***"`, never its value.

Decisions (docs/config.md, "Describing the schema"):

* a section is a top-level key of `Config`; its group is one of zerocode's ranks (`GROUPS`), its label the key made
  readable, its help the section model's docstring or the field's description (a short built-in sentence else);
* a leaf is a field that is not itself a model or a map of models; a map section (`agents`, `providers`, ...) has
  one leaf per field of each configured entry (`agents.<alias>.<field>`), the implicit `agents.default` and
  `providers.scripted` included;
* `populated`: the key is written in config.toml (`ConfigStore.written`), not a default: the implicit
  `agents.default` and `providers.scripted` are populated only where the file says so;
* `completed`: some leaf of the section is populated, i.e. the section is configured in the file;
* `agents.<alias>.provider` names a `[providers.<alias>]` entry: it is an `enum` whose variants are the configured
  providers (a picker), not a free string.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from app.config import props
from app.config.errors import UnknownProp
from app.config.schema import Config, FieldSpec, fields_of, is_section, to_data
from app.config.secret import Secret

__all__ = [
    "GROUPS",
    "ConfigFieldEntry",
    "ConfigSection",
    "ConfigTemplate",
    "PropKind",
    "field_entries",
    "map_keys",
    "path_matches_prefix",
    "sections",
    "templates",
]

# zerocode's section ranks (apps/zerocode/src/config_manager.rs:3354-3370); unknown: Other.
GROUPS = ("Foundation", "Agent", "Multi-agent", "Tools", "Integrations", "Network", "Storage", "Operations", "Other")

PropKind = Literal["string", "bool", "integer", "float", "enum", "alias_ref", "string_array", "object_array", "object"]

# Our sections in ZeroClaw's groups (crates/zeroclaw-config/src/sections.rs `SectionGroup`):
# providers and agents first, as its quickstart; users with storage ("Storage, identity, secrets").
_GROUP: dict[str, str] = {
    "providers": "Foundation",
    "agents": "Foundation",
    "context": "Agent",
    "tools": "Tools",
    "compat": "Integrations",
    "mcp": "Integrations",
    "gateway": "Network",
    "wss": "Network",
    "storage": "Storage",
    "users": "Storage",
    "permission_profiles": "Storage",
    "permissions": "Tools",
    "limits": "Operations",
    "daemon": "Operations",
    "telemetry": "Operations",
}

# Help for a section whose model has no docstring and whose field no description.
_HELP: dict[str, str] = {
    "limits": "Per-connection and daemon-wide limits.",
    "tools": "Timeouts and output limits of the built-in tools.",
    "daemon": "The daemon process: ephemeral grace and config file polling.",
    "context": "How much conversation a session keeps for the model.",
    "gateway": "The HTTP and WebSocket gateway: address, TLS and allowed hosts.",
    "wss": "zerocode's remote mode: a TLS WebSocket listener for paired terminals.",
    "storage": "Where sessions and tokens are stored (SQLite by default).",
    "compat": "Compatibility with other clients (zerocode).",
    "providers": "Model providers, one per alias; agents name one.",
    "agents": "Agents, one per alias: provider, model, tools and workspace.",
    "permission_profiles": "Named sets of grants, config write paths and allowed agents.",
    "users": "Users by name: their uid and permission profiles.",
    "permissions": "Allow, ask and deny rules over tools and their arguments.",
}

# (section, field) → the map section whose entry names it holds.
_ALIAS_REFS: dict[tuple[str, str], str] = {("agents", "provider"): "providers"}


@dataclass(frozen=True, slots=True)
class ConfigSection:
    """One entry of `config/sections` (ZeroClaw's `ConfigSectionEntry`, `shape` omitted: none is a quickstart)."""

    key: str
    label: str
    help: str
    has_picker: bool
    completed: bool
    ready: bool
    group: str
    is_quickstart: bool
    cost_category: str


@dataclass(frozen=True, slots=True)
class ConfigFieldEntry:
    """One leaf of `config/list` (ZeroClaw's `ConfigFieldEntry`). `value` is plain JSON (user data, keys kept)."""

    path: str
    category: str
    kind: PropKind
    type_hint: str
    value: Any
    populated: bool
    is_secret: bool
    is_env_overridden: bool
    enum_variants: list[str]
    description: str


@dataclass(frozen=True, slots=True)
class ConfigTemplate:
    """One map section of `config/templates` (ZeroClaw's `MapKeySection` as `ConfigTemplateEntry`)."""

    path: str
    kind: Literal["map"]
    value_type: str
    description: str


# -- sections ----------------------------------------------------------------------------------


def sections(config: Config, written: Mapping[str, Any]) -> list[ConfigSection]:
    """Every top-level section of the schema, alphabetically (ZeroClaw lists non-quickstart sections so).
    `written`: what config.toml holds (`ConfigStore.written`)."""
    populated = {entry.category for entry in field_entries(config, written) if entry.populated}
    return [
        ConfigSection(
            key=key,
            label=_label(key),
            help=section_help(key),
            has_picker=False,
            completed=key in populated,
            ready=False,
            group=_GROUP.get(key, "Other"),
            is_quickstart=False,
            cost_category="",
        )
        for key in sorted(fields_of(Config))
    ]


def section_help(key: str) -> str:
    field = fields_of(Config)[key]
    model = _entry_model(field.annotation) or _model(field.annotation)
    doc = (model.__doc__ or "").strip().split("\n\n", 1)[0] if model is not None else ""
    return _description(field) or " ".join(doc.split()) or _HELP.get(key, "")


def _label(key: str) -> str:
    """ZeroClaw's `humanize_section_key`: `permission_profiles` → `Permission profiles`."""
    text = key.replace("_", " ").replace("-", " ").replace(".", " ")
    return text[:1].upper() + text[1:]


# -- templates and map keys --------------------------------------------------------------------


def templates() -> list[ConfigTemplate]:
    """The top-level map sections (`agents`, `providers`, ...), whose entries a client creates by name."""
    out: list[ConfigTemplate] = []
    for key, field in fields_of(Config).items():
        if get_origin(field.annotation) is dict:
            value = get_args(field.annotation)[1]
            out.append(ConfigTemplate(key, "map", _hint(value), section_help(key)))
    return out


def map_keys(config: Config, path: str) -> list[str]:
    """The configured keys of the map at `path` (`agents`, `permission_profiles.<name>.grants`). Raises
    `UnknownProp` when `path` is not a map in the schema, or names an entry that does not exist."""
    target = props.resolve(path)  # syntax and schema; raises UnknownProp
    tp: Any = Config
    for seg in target.shape:
        if get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            model = _model(tp)
            assert model is not None and seg is not None  # resolve() walked the same way
            tp = fields_of(model)[seg].annotation
    if get_origin(tp) is not dict:
        raise UnknownProp(path, "no map-keyed section at this path")
    value = props.get(config, ".".join(target.parts))  # raises UnknownProp for a missing entry
    return list(value) if isinstance(value, Mapping) else []


# -- fields ------------------------------------------------------------------------------------


def path_matches_prefix(path: str, prefix: str) -> bool:
    """ZeroClaw's rule (crates/zeroclaw-config/src/field_visibility.rs): `path` is `prefix` or lies below it at a
    `.` boundary (`agents.a` does not match `agents.ab.model`); an empty prefix matches everything."""
    if not path.startswith(prefix):
        return False
    rest = path[len(prefix) :]
    return not prefix or not rest or rest.startswith(".") or prefix.endswith(".")


def field_entries(config: Config, written: Mapping[str, Any], prefix: str | None = None) -> list[ConfigFieldEntry]:
    """Every leaf under `prefix` (all when None or empty), in schema order, map entries in config order.
    `written`: what config.toml holds (`ConfigStore.written`), which says what is `populated`."""
    data = props.masked(config)
    out: list[ConfigFieldEntry] = []
    for key, field in fields_of(Config).items():
        if prefix and prefix != key and not prefix.startswith(key + "."):
            continue  # nothing below this section can match
        for entry in _section_leaves(config, key, field, data.get(key), written.get(key)):
            if not prefix or path_matches_prefix(entry.path, prefix):
                out.append(entry)
    return out


def _below(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, Mapping) else None


def _section_leaves(config: Config, key: str, field: FieldSpec, data: Any, written: Any) -> Iterator[ConfigFieldEntry]:
    value = getattr(config, key)
    if _entry_model(field.annotation) is not None:
        for name, entry in value.items():
            yield from _model_leaves(config, key, entry, (key, name), _below(data, name), _below(written, name))
        return
    if isinstance(value, msgspec.Struct):
        yield from _model_leaves(config, key, value, (key,), data, written)
        return
    yield _leaf(config, key, (key,), key, field, data, written is not None)


def _model_leaves(
    config: Config, section: str, instance: msgspec.Struct, path: tuple[str, ...], data: Any, written: Any
) -> Iterator[ConfigFieldEntry]:
    for name, field in fields_of(type(instance)).items():
        sub, sub_written = _below(data, name), _below(written, name)
        child = getattr(instance, name)
        if isinstance(child, msgspec.Struct):
            yield from _model_leaves(config, section, child, (*path, name), sub, sub_written)
        elif _entry_model(field.annotation) is not None:
            for key, entry in child.items():
                where = (*path, name, key)
                yield from _model_leaves(config, section, entry, where, _below(sub, key), _below(sub_written, key))
        else:
            populated = isinstance(written, Mapping) and name in written
            yield _leaf(config, section, (*path, name), name, field, sub, populated)


def _leaf(
    config: Config, section: str, path: tuple[str, ...], name: str, field: FieldSpec, value: Any, populated: bool
) -> ConfigFieldEntry:
    kind, variants = _kind(field.annotation)
    hint = _hint(field.annotation)
    if (ref := _ALIAS_REFS.get((section, name))) is not None and kind == "string":
        kind, variants = "enum", list(getattr(config, ref))
        hint = f"{hint} (a [{ref}.<alias>] name)"
    return ConfigFieldEntry(
        path=".".join(path),
        category=section,
        kind=kind,
        type_hint=hint,
        value=value,
        populated=populated,
        is_secret=_is_secret(field.annotation),
        is_env_overridden=False,  # no config key is read from the environment
        enum_variants=variants,
        description=_describe(field),
    )


# -- types -------------------------------------------------------------------------------------


def _model(tp: Any) -> type[msgspec.Struct] | None:
    return tp if is_section(tp) else None


def _entry_model(tp: Any) -> type[msgspec.Struct] | None:
    """The entry model of a map of models (`dict[str, Agent]` → `Agent`)."""
    return _model(get_args(tp)[1]) if get_origin(tp) is dict else None


def _optional_inner(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _is_secret(tp: Any) -> bool:
    return _optional_inner(tp) is Secret


def _kind(tp: Any) -> tuple[PropKind, list[str]]:
    inner = _optional_inner(tp)
    if get_origin(inner) is Annotated:  # `Annotated[float, Meta(ge=0)] | None`: the bound is not the kind
        inner = get_args(inner)[0]
    origin = get_origin(inner)
    if origin is Literal:
        return "enum", [str(v) for v in get_args(inner)]
    if inner is bool:
        return "bool", []
    if inner is int:
        return "integer", []
    if inner is float:
        return "float", []
    if inner is str or inner is Secret:
        return "string", []
    if origin is list:
        item = get_args(inner)[0] if get_args(inner) else Any
        if _model(item) is not None or get_origin(item) is dict:
            return "object_array", []
        return "string_array", []
    return "object", []


def _hint(tp: Any) -> str:
    """A type as a reader writes it: `int`, `str | None`, `list[str]`, `'scripted' | 'openai'`."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_hint(a) for a in get_args(tp))
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_hint(a) for a in get_args(tp))}]"
    if tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else str(tp)


def _description(field: FieldSpec) -> str:
    return next((m.description for m in field.meta if m.description), "")


def _describe(field: FieldSpec) -> str:
    """The field's description, else its default and bounds (`default 64; >= 1`)."""
    if description := _description(field):
        return description
    parts: list[str] = []
    default = None if field.required else field.default_value()
    if default is None:
        parts.append("required" if field.required else "unset by default")
    else:
        parts.append(f"default {json.dumps(to_data(default), default=str)}")
    for meta in field.meta:  # the bounds of `Meta(ge=...)`
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                parts.append(f"{sign} {bound}")
    return "; ".join(parts)
