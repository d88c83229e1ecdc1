"""The gateway tests' environment: the services assembled as `app.daemon._serve` does, over a migrated temp
SQLite database (a module of its own, so tests import it by a name no other `conftest` shadows)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.auth.pairing import PairingStore
from app.auth.pairing_codes import PairingCodes
from app.auth.tokens import PairedTokens
from app.config.store import ConfigStore
from app.paths import Paths
from app.self_metrics import Observations
from app.services import Services
from app.sessions.registry import SessionRegistry
from app.sessions.store.session_store import SessionStore
from app.storage import Database, default_url
from app.storage.migrate import upgrade
from gateway.app import create_app
from rpc.contract.discover import encoded_document
from rpc.core.context import CallContext
from rpc.core.dispatcher import Dispatcher
from rpc.core.registry import NoParams, Registry
from rpc.dialects import DIALECTS
from rpc.methods import ERROR_MAPPERS, build_registry

BASE_TOML = """\
[permission_profiles.admin]
admin = true

[permission_profiles.reader]
grants = { system = ["read"], config = ["read"] }

[permission_profiles.tuner]
grants = { config = ["read", "update"] }
config_write_paths = ["limits.*"]

[permission_profiles.nobody]

[users.boss]
permission_profiles = ["admin"]

[users.alice]
permission_profiles = ["reader"]

[users.tina]
permission_profiles = ["tuner"]

[users.eve]
permission_profiles = ["nobody"]
"""


def config_toml(**limits: Any) -> str:
    """The test config: users boss (admin), alice (reader), tina (config writer), eve (no grants)."""
    lines = [BASE_TOML, "[limits]"] + [f"{key} = {value!r}" for key, value in limits.items()]
    return "\n".join(lines) + "\n"


def test_registry() -> Registry:
    registry = build_registry()

    def local(call: CallContext, params: NoParams) -> dict[str, bool]:
        return {"local": True}

    # No real local-only method exists yet (file/upload/* come later): this one pins the rule (R-FILE-5).
    registry.method("test/local", params=NoParams, grant="system:read", local_only=True)(local)
    return registry


@dataclass
class Env:
    services: Services
    registry: Registry
    server: Dispatcher
    codes: PairingCodes
    app: Starlette
    tmp: Path

    async def token(self, user: str = "boss") -> tuple[str, str]:
        """(token_id, token) for a fresh paired token of `user`."""
        record, token = await self.services.pairing.create(user, None)
        return record.token_id, token


async def build_env(tmp: Path, toml: str, codes: PairingCodes | None = None) -> Env:
    """Assembled like `app.daemon._serve`."""
    tmp.mkdir(mode=0o700, exist_ok=True)
    (tmp / "config.toml").write_text(toml)
    data = tmp / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    paths = Paths(config_dir=tmp, data_dir=data, endpoint=str(data / "daemon.sock"))
    config_store = ConfigStore(tmp)
    url = default_url(data)
    await asyncio.to_thread(upgrade, url)
    observations = Observations()
    db = await Database.open(url, timings=observations.storage)
    audit = AuditLog(paths.audit_log)
    pairing = PairedTokens(PairingStore(db))
    auth = Authenticator(lambda: config_store.current, lambda: config_store.policy_generation, os.getuid())
    auth.tokens = pairing
    sessions = SessionRegistry(SessionStore(db), lambda: config_store.current, data)
    services = Services(
        paths=paths,
        config_store=config_store,
        auth=auth,
        audit=audit,
        db=db,
        pairing=pairing,
        sessions=sessions,
        observations=observations,
    )
    registry = test_registry()
    server = Dispatcher(
        registry,
        services,
        audit,
        limits=lambda: config_store.current.limits,
        dialects=tuple(DIALECTS.values()),
        contract=encoded_document,
    )
    for mapper in ERROR_MAPPERS:
        server.errors.add_mapper(mapper)
    codes = codes or PairingCodes()
    app = create_app(server, pairing_codes=codes)
    return Env(services, registry, server, codes, app, tmp)


async def close_env(env: Env) -> None:
    await env.services.sessions.shutdown()
    await env.services.db.close()
    env.services.audit.close()


EnvFactory = Callable[..., Awaitable[Env]]
