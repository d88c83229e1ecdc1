"""Temporary read-only loader; replaced by the config store."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from app.config.schema import Config


class ConfigLoadError(Exception):
    pass


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigLoadError(f"cannot read {path}: {exc}") from None
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) for e in exc.errors())
        raise ConfigLoadError(f"invalid settings in {path}: {fields}") from None
