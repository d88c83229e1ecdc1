"""Persistence: SQLAlchemy models, the engine and the `Database` facade.

Schema upgrades live in `app.storage.migrate` (imported on demand: it pulls in Alembic).
"""

from __future__ import annotations

from app.storage.database import Database
from app.storage.engine import create_engine, default_url
from app.storage.types import iso_z, utcnow

__all__ = ["Database", "create_engine", "default_url", "iso_z", "utcnow"]
