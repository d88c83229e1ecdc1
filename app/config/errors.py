"""Config errors, in one place. No message or attribute ever carries a config value (R-SEC-6).

    ConfigError
     ├── ConfigFileError        config.toml can't be parsed or validated at load: the daemon does not start
     ├── ConfigWriteError       persisting failed (I/O), nothing changed               -> -32603
     │    └── ConfigConflict    config.toml was changed by someone else since it was loaded
     └── InvalidConfigRequest   the caller's request is wrong, nothing changed          -> -32602
          ├── InvalidBatch      `sets` is not an array of 1..256 entries (no index)
          ├── InvalidEntry      an entry is not `{prop: string, value: any}`  (index)
          ├── UnknownProp       bad path syntax, not in the schema, or no such map entry (prop, index)
          └── InvalidValue      the value (or the whole candidate) fails validation  (prop, errors, index)

`index` is the zero-based position in a `config/set-many` batch, or None for single-prop calls. `errors` is a
list of `{"field", "message", "type"}`: `field` is a dotted path (a property path for values and unknown props,
a params path such as `sets.3.value` for entry structure), `message` is human-readable, `type` a stable
snake_case name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

__all__ = [
    "ConfigConflict",
    "ConfigError",
    "ConfigFileError",
    "ConfigWriteError",
    "FieldError",
    "InvalidBatch",
    "InvalidConfigRequest",
    "InvalidEntry",
    "InvalidValue",
    "UnknownProp",
]


class FieldError(TypedDict):
    field: str
    message: str
    type: str


class ConfigError(Exception):
    """Base of every config error. `kind` is a stable snake_case name."""

    kind = "config_error"

    def __init__(self, message: str, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.errors: list[FieldError] = list(errors)


class ConfigFileError(ConfigError):
    """config.toml exists but is not valid TOML or does not match the schema."""

    kind = "config_file_invalid"


class ConfigWriteError(ConfigError):
    """Writing config.toml failed; the file and the live config are unchanged."""

    kind = "config_write_failed"


class ConfigConflict(ConfigWriteError):
    """config.toml changed on disk after the daemon loaded it; writing would silently drop those edits."""

    kind = "config_conflict"


class InvalidConfigRequest(ConfigError):
    """The request is invalid; maps to -32602 with `data.errors` and, in a batch, `data.index`."""

    kind = "invalid_params"

    def __init__(
        self,
        message: str,
        errors: Sequence[FieldError] = (),
        *,
        prop: str | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message, errors)
        self.prop = prop
        self.index = index


class InvalidBatch(InvalidConfigRequest):
    kind = "invalid_batch"


class InvalidEntry(InvalidConfigRequest):
    kind = "invalid_entry"

    def __init__(self, index: int, field: str, message: str) -> None:
        # Located like a params error: `sets.<index>` or `sets.<index>.<key>`.
        where = f"sets.{index}.{field}" if field else f"sets.{index}"
        super().__init__(
            f"entry {index}: {message}",
            [FieldError(field=where, message=message, type=self.kind)],
            index=index,
        )


class UnknownProp(InvalidConfigRequest):
    kind = "unknown_prop"

    def __init__(self, prop: str, reason: str = "unknown property", *, index: int | None = None) -> None:
        # The path is the caller's own key, not a value; it is safe to name.
        super().__init__(reason, [FieldError(field=prop, message=reason, type=self.kind)], prop=prop, index=index)


class InvalidValue(InvalidConfigRequest):
    kind = "invalid_value"

    def __init__(self, prop: str | None, errors: Sequence[FieldError], *, index: int | None = None) -> None:
        super().__init__("invalid value", errors, prop=prop, index=index)
