"""Configuration: typed schema, TOML load/save, property paths."""

from __future__ import annotations

from app.config.schema import Config, Limits

__all__ = ["Config", "Limits"]
