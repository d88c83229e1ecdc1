"""Dotted property paths over the config schema (R-CFG-1): resolve, read (masked), stage a set or a delete.

A path is segments of TOML bare-key characters joined by dots: `limits.max_connections`, `users.example.uid`,
`permission_profiles.operator.grants.config`. A segment after a map field (`agents`, `providers`, `users`,
`permission_profiles`, a profile's `grants`) is an entry name; entries are created on first set.

Staging works on the tomlkit document itself (`apply_set`/`apply_delete`), so the comments, layout and unknown
keys of the user's file survive untouched around the keys we change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, get_args, get_origin

import msgspec

from app.config.errors import FieldError, InvalidValue, UnknownProp
from app.config.schema import KEY_RE, Config, convert, fields_of, is_section, to_data
from app.config.secret import Secret
from app.validation import field_error, locate

__all__ = [
    "MASK",
    "Target",
    "apply_delete",
    "apply_set",
    "diff",
    "get",
    "masked",
    "resolve",
    "split_known",
    "validate_data",
]

MASK = "***"
MAX_PROP_CHARS = 256
_I64 = 2**63


@dataclass(frozen=True)
class Target:
    """A resolved path. `shape` is `parts` with entry names replaced by None (the schema position);
    `tables[i]` says how to create the table at `parts[: i + 1]` when it is missing."""

    parts: tuple[str, ...]
    shape: tuple[str | None, ...]
    tables: tuple[bool, ...]  # True: a map of models, created as a header-less "super" table

    def check(self, value: Any) -> None:
        """Validate `value` for this position (strict); raises `InvalidValue` naming fields, never values."""
        validate, named = _checker(self.shape)
        try:
            validate(value)
        except msgspec.ValidationError as exc:
            # `from None`: a chained error would print the value (maybe a secret) in a traceback.
            error = field_error(exc, self.parts[:-1] if named else self.parts)
            raise InvalidValue(".".join(self.parts), [error]) from None


def _child(tp: Any, seg: str) -> tuple[Any, list[Any], bool] | None:
    """(type, constraints, is_entry) one segment below `tp`, or None when `tp` has no such child."""
    if is_section(tp):
        field = fields_of(tp).get(seg)
        return None if field is None else (field.annotation, list(field.meta), False)
    if get_origin(tp) is dict:
        return get_args(tp)[1], [], True
    return None


def _is_model_map(tp: Any) -> bool:
    if get_origin(tp) is not dict:
        return False
    return is_section(get_args(tp)[1])


def resolve(prop: str) -> Target:
    """Check `prop` against the schema; raises `UnknownProp` for bad syntax or a path the schema lacks."""
    shown = prop[:MAX_PROP_CHARS]
    if len(prop) > MAX_PROP_CHARS:
        raise UnknownProp(shown, "property path too long")
    parts = tuple(prop.split("."))
    if not all(KEY_RE.match(seg) for seg in parts):
        raise UnknownProp(shown, "invalid property path: segments of letters, digits, '_' or '-' joined by '.'")
    tp: Any = Config
    shape: list[str | None] = []
    tables: list[bool] = []
    for seg in parts:
        step = _child(tp, seg)
        if step is None:
            raise UnknownProp(shown)
        tp, _, is_entry = step
        shape.append(None if is_entry else seg)
        tables.append(_is_model_map(tp))
    if _in_grants(tuple(shape)):
        # Resource names are case-insensitive (R-AUTH-1): `grants.Config` and `grants.config` are one key.
        parts = (*parts[:-1], parts[-1].lower())
    return Target(parts, tuple(shape), tuple(tables))


def _in_grants(shape: tuple[str | None, ...]) -> bool:
    return shape[:3] == ("permission_profiles", None, "grants") and len(shape) == 4


@cache  # bounded by the schema: one checker per field position
def _checker(shape: tuple[str | None, ...]) -> tuple[Callable[[Any], object], bool]:
    """(validate, named): `named` when errors are located from the field name, not from the value."""
    parent: Any = None
    tp: Any = Config
    meta: list[Any] = []
    for seg in shape:
        parent = tp
        step = _child(tp, seg or "_")
        assert step is not None  # shape came from resolve()
        tp, meta, _ = step
    name = shape[-1]
    if name is not None and is_section(parent):
        # The field alone in a default section, so the section's own checks run too (uid >= 0, grants...).
        return (lambda v: convert({name: v}, parent)), True
    # A map entry: the entry's type, with constraints (ge=, gt=, ...) carried by Annotated if any.
    entry = Annotated[(tp, *meta)] if meta else tp
    return (lambda v: convert(v, entry)), False


def _toml_value(value: Any, prop: str) -> Any:
    """The JSON value as TOML will hold it: dict keys with null dropped (null = default, TOML has no null)."""

    def bad(message: str) -> InvalidValue:
        return InvalidValue(prop, [FieldError(field=prop, message=message, type="json_type")])

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not -_I64 <= value < _I64:
            raise bad("integer out of the 64-bit range TOML can store")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad("number must be finite")
        return value
    if isinstance(value, list):
        return [_toml_value(v, prop) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _toml_value(v, prop) for k, v in value.items() if v is not None}
    raise bad("value must be JSON")


def _descend(doc: MutableMapping[str, Any], target: Target, *, create: bool) -> MutableMapping[str, Any] | None:
    """The table holding the last segment; missing tables are created, or None is returned."""
    node = doc
    for i, seg in enumerate(target.parts[:-1]):
        child = node.get(seg)
        if child is None:
            if not create:
                return None
            import tomlkit  # only to stage a write: a daemon start without config.toml never imports it
            from tomlkit.items import InlineTable

            # Inside an inline table only inline tables are valid TOML.
            fresh = tomlkit.inline_table() if isinstance(node, InlineTable) else tomlkit.table(target.tables[i])
            node[seg] = fresh
            child = node[seg]
        if not isinstance(child, MutableMapping):
            path = ".".join(target.parts[: i + 1])
            raise InvalidValue(path, [FieldError(field=path, message="not a table in config.toml", type="toml")])
        node = child
    return node


def apply_set(candidate: MutableMapping[str, Any], prop: str, value: Any) -> None:
    """Stage `prop = value` into `candidate` (a tomlkit document). Raises `UnknownProp` or `InvalidValue`.

    The value must already have the field's type (strict: `"5"` is not an int, `true` is not an int); null on
    an optional field removes the key like `apply_delete`, which resets it to its default (None).
    """
    target = resolve(prop)
    toml_value = _toml_value(value, prop)
    target.check(value)
    if toml_value is None:
        _remove(candidate, target)  # like config/delete: never creates an entry just to leave it empty
        return
    node = _descend(candidate, target, create=True)
    assert node is not None
    _drop_case_variants(node, target)
    node[target.parts[-1]] = toml_value


def apply_delete(candidate: MutableMapping[str, Any], prop: str) -> None:
    """Stage a reset of `prop` to its default; for a map entry (`users.example`) the entry is removed.
    Deleting something that is not set is a no-op."""
    _remove(candidate, resolve(prop))


def _remove(candidate: MutableMapping[str, Any], target: Target) -> None:
    node = _descend(candidate, target, create=False)
    if node is not None:
        _drop_case_variants(node, target)
        node.pop(target.parts[-1], None)


def _drop_case_variants(node: MutableMapping[str, Any], target: Target) -> None:
    """A hand-written `Config = [...]` is the same grant key as `config`: replacing or deleting one must not
    leave the other behind (a revocation that silently keeps the grant)."""
    if _in_grants(target.shape):
        key = target.parts[-1]
        for other in [k for k in node if k != key and k.lower() == key]:
            del node[other]


def _mask(value: Any) -> Any:
    if isinstance(value, Secret):
        return MASK
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def masked(config: Config) -> dict[str, Any]:
    """The whole config as JSON-ready data, every secret replaced by `"***"` (an unset secret stays null)."""
    data: dict[str, Any] = _mask(to_data(config))
    return data


def get(config: Config, prop: str | None = None) -> Any:
    """The masked value at `prop` (the whole config when None). A missing map entry is `UnknownProp`."""
    data = masked(config)
    if prop is None:
        return data
    target = resolve(prop)
    node: Any = data
    for seg in target.parts:
        if not isinstance(node, dict) or seg not in node:
            raise UnknownProp(prop, "no such entry")
        node = node[seg]
    return node


def diff(old: Config, new: Config) -> list[str]:
    """The property paths whose values differ between `old` and `new`: the props a `config/set-many` turning
    one into the other would name. An entry added or removed is named whole (`users.me`). Never a value."""
    out: list[str] = []
    _diff(to_data(old), to_data(new), (), out)
    return out


def _diff(old: Any, new: Any, path: tuple[str, ...], out: list[str]) -> None:
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old != new:  # a Secret compares its value, without revealing it
            out.append(".".join(path))
        return
    for key in dict.fromkeys([*old, *new]):
        if key in old and key in new:
            _diff(old[key], new[key], (*path, key), out)
        else:
            out.append(".".join((*path, key)))


def split_known(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Split file data into what the schema knows and the dotted paths of keys it does not know.

    Unknown keys stay in the document (and so in the file) but are never validated or used.
    """
    unknown: list[str] = []
    known: dict[str, Any] = _known(Config, data, (), unknown)
    return known, unknown


def _known(tp: Any, value: Any, path: tuple[str, ...], unknown: list[str]) -> Any:
    if not isinstance(value, Mapping):
        return value  # wrong shapes are left for validation to report
    if is_section(tp):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            step = _child(tp, key)
            if step is None:
                unknown.append(".".join((*path, key)))
            else:
                out[key] = _known(step[0], sub, (*path, key), unknown)
        return out
    if get_origin(tp) is dict:
        item = get_args(tp)[1]
        return {k: _known(item, v, (*path, k), unknown) for k, v in value.items()}
    return value


def validate_data(data: Mapping[str, Any]) -> Config:
    """Validate known data (see `split_known`) as a whole `Config`; raises `InvalidValue` (prop None) naming the
    first failing field (a map entry by its name)."""
    try:
        config: Config = convert(data)
    except msgspec.ValidationError as exc:
        raise InvalidValue(None, [locate(exc, data, Config, convert)]) from None
    return config
