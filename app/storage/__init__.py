"""Persistence: SQLAlchemy models, the engine and the `Database` facade.

Schema upgrades live in `app.storage.migrate`. The names below are loaded on first use (PEP 562), so importing
`app.storage.<module>` or `iso_z` does not import SQLAlchemy: a daemon whose database is current starts without it
(`app.storage.deferred`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.storage.database import Database
    from app.storage.engine import create_engine, default_url
    from app.storage.timestamps import iso_z, utcnow

__all__ = ["Database", "create_engine", "default_url", "iso_z", "utcnow"]

_HOMES = {
    "Database": "app.storage.database",
    "create_engine": "app.storage.engine",
    "default_url": "app.storage.engine",
    "iso_z": "app.storage.timestamps",
    "utcnow": "app.storage.timestamps",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value
