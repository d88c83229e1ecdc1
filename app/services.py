"""The daemon's domain services, assembled once by `app.daemon` and handed to every surface."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app import __version__
from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.auth.pairing_codes import PairingCodes
from app.config.schema import Config
from app.config.store import ConfigStore
from app.paths import Paths
from app.self_metrics import Observations

if TYPE_CHECKING:
    from app.agents.permissions import RuleBook
    from app.agents.sandbox import SandboxHost
    from app.auth.tokens import PairedTokens
    from app.files.service import FileService
    from app.sessions.registry import SessionRegistry
    from app.storage.database import Database

__all__ = ["DaemonStatus", "GatewayInfo", "Services"]


@dataclass(frozen=True, slots=True)
class GatewayInfo:
    url: str


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    """The daemon half of `status` (`Services.describe`); the protocol layer adds what it knows. The gateway's
    OpenAPI `Status` schema is derived from these fields (`gateway.openapi.models.wire_model`): add one here only."""

    server_version: str
    pid: int
    endpoint: str
    gateway: GatewayInfo | None
    data_dir: str
    config_file: str
    uptime_secs: float
    active_sessions: int
    session_ids: list[str]
    sandbox: str = "off"  # what `bash` runs under now (R-GUARD-4): "bwrap", "off", or "unavailable" (required, broken)


@dataclass(eq=False)
class Services:
    paths: Paths
    config_store: ConfigStore
    auth: Authenticator
    audit: AuditLog
    db: Database | None  # None on a fast start, where the first call opens it (app.storage.deferred)
    pairing: PairedTokens
    sessions: SessionRegistry
    permissions: RuleBook | None = None  # remembered permission rules (R-GUARD-3); None in tests that need none
    sandbox: SandboxHost | None = None  # the bash sandbox (R-GUARD-4); None: unsandboxed (tests)
    files: FileService | None = None  # the files service (SPEC §8) once made (`file_service`)
    # Makes `files` on first use: a daemon never asked about files never imports `app.files`.
    files_factory: Callable[[], FileService] | None = None
    pairing_codes: PairingCodes = field(default_factory=PairingCodes)  # one-time codes for `POST /pair`
    clock: Callable[[], int] = time.monotonic_ns  # what `uptime_ms` counts with; tests freeze it
    started_ns: int = field(default_factory=time.monotonic_ns)
    gateway_url: str | None = None  # set once the gateway listens
    observations: Observations = field(default_factory=Observations)  # storage and turn timings (`GET /metrics`)

    @property
    def version(self) -> str:
        """The package's version (`server_version`)."""
        return __version__

    def file_service(self) -> FileService | None:
        """The files service, made by the first call that needs it; None only in tests that do not need it."""
        if self.files is None and self.files_factory is not None:
            self.files = self.files_factory()
        return self.files

    @property
    def config(self) -> Config:
        """The config in force now (swapped whole on every commit)."""
        return self.config_store.current

    def describe(self, now_ns: int | None = None) -> DaemonStatus:
        """The daemon half of `status` at `now_ns` (a reading of `clock`) or now; the protocol layer adds what it
        knows. Built afresh: the one cache of `status` is the JSON-RPC method's (`rpc.methods.lifecycle`)."""
        live = self.sessions.live
        return DaemonStatus(
            server_version=self.version,
            pid=os.getpid(),
            endpoint=self.paths.endpoint,
            gateway=GatewayInfo(self.gateway_url) if self.gateway_url else None,
            data_dir=str(self.paths.data_dir),
            config_file=str(self.paths.config_file),
            uptime_secs=self.uptime_ms(now_ns) / 1000,
            active_sessions=len(live),
            session_ids=sorted(live),
            sandbox=self.sandbox.mode(self.config.tools.bash.sandbox) if self.sandbox is not None else "off",
        )

    def uptime_ms(self, now_ns: int | None = None) -> int:
        """Milliseconds since start, at `now_ns` (a reading of `clock`) or now."""
        return ((self.clock() if now_ns is None else now_ns) - self.started_ns) // 1_000_000
