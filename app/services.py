"""The daemon's domain services, assembled once by `app.daemon` and handed to every surface."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.auth.tokens import PairedTokens
from app.config.schema import Config
from app.paths import Paths
from app.storage import Database

__all__ = ["Services", "package_version"]


def package_version() -> str:
    try:
        return version("zeroclaw")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0"


@dataclass
class Services:
    paths: Paths
    config: Config
    auth: Authenticator
    audit: AuditLog
    db: Database
    pairing: PairedTokens = field(init=False)
    version: str = field(default_factory=package_version)
    gateway_url: str | None = None
    started_at: float = field(default_factory=time.monotonic)
    config_generation: int = 0

    def describe(self) -> dict[str, Any]:
        """The daemon half of `status` (the protocol layer adds what it knows)."""
        return {
            "serverVersion": self.version,
            "pid": os.getpid(),
            "uptimeSecs": round(time.monotonic() - self.started_at, 3),
            "endpoint": self.paths.endpoint,
            "gateway": {"url": self.gateway_url} if self.gateway_url else None,
            "dataDir": str(self.paths.data_dir),
            "configFile": str(self.paths.config_file),
            "activeSessions": 0,
            "sessionIds": [],
        }
