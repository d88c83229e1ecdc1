"""The daemon's domain services, assembled once by `app.daemon` and handed to every surface."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.auth.tokens import PairedTokens
from app.config.schema import Config
from app.config.store import ConfigStore
from app.paths import Paths
from app.storage import Database

if TYPE_CHECKING:
    from app.sessions.registry import SessionRegistry

__all__ = ["Services", "package_version"]


def package_version() -> str:
    try:
        return version("zeroclaw")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0"


@dataclass(eq=False)
class Services:
    paths: Paths
    config_store: ConfigStore
    auth: Authenticator
    audit: AuditLog
    db: Database
    pairing: PairedTokens
    sessions: SessionRegistry
    version: str = field(default_factory=package_version)
    gateway_url: str | None = None
    started_at: float = field(default_factory=time.monotonic)

    @property
    def config(self) -> Config:
        """The config in force now (swapped whole on every commit)."""
        return self.config_store.current

    def describe(self) -> dict[str, Any]:
        """The daemon half of `status` (the protocol layer adds what it knows)."""
        live = self.sessions.live
        return {
            "serverVersion": self.version,
            "pid": os.getpid(),
            "uptimeSecs": round(time.monotonic() - self.started_at, 3),
            "endpoint": self.paths.endpoint,
            "gateway": {"url": self.gateway_url} if self.gateway_url else None,
            "dataDir": str(self.paths.data_dir),
            "configFile": str(self.paths.config_file),
            "activeSessions": len(live),
            "sessionIds": sorted(live),
        }
