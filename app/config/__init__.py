"""Configuration: typed schema, TOML load/save (atomic, comment-preserving), property paths, the store."""

from __future__ import annotations

from app.config.errors import (
    ConfigConflict,
    ConfigError,
    ConfigFileError,
    ConfigWriteError,
    FieldError,
    InvalidBatch,
    InvalidConfigRequest,
    InvalidEntry,
    InvalidValue,
    UnknownProp,
)
from app.config.schema import Config, Limits
from app.config.store import MAX_BATCH, Authorize, CommitListener, ConfigStore

__all__ = [
    "MAX_BATCH",
    "Authorize",
    "CommitListener",
    "Config",
    "ConfigConflict",
    "ConfigError",
    "ConfigFileError",
    "ConfigStore",
    "ConfigWriteError",
    "FieldError",
    "InvalidBatch",
    "InvalidConfigRequest",
    "InvalidEntry",
    "InvalidValue",
    "Limits",
    "UnknownProp",
]
