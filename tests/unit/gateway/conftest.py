"""Fixtures for the gateway tests: an environment from `gateway_env`, an httpx client on the ASGI app, and a
real uvicorn on 127.0.0.1 port 0."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_env import Env, EnvFactory, build_env, close_env, config_toml

from app.auth.pairing_codes import PairingCodes
from gateway.server import GatewayHandle, start_gateway
from rpc.transports.websocket import ws_max_size


@pytest.fixture
async def make_env(tmp_path: Path) -> AsyncIterator[EnvFactory]:
    made: list[Env] = []

    async def factory(codes: PairingCodes | None = None, **limits: Any) -> Env:
        env = await build_env(tmp_path / f"env{len(made)}", config_toml(**limits), codes)
        made.append(env)
        return env

    yield factory
    for env in made:
        await close_env(env)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    env = await build_env(tmp_path / "cfg", config_toml())
    yield env
    await close_env(env)


@pytest.fixture
async def client(env: Env) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=env.app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[GatewayHandle]]]:
    """Start `env.app` on a real uvicorn (127.0.0.1, port 0); every gateway is closed at teardown."""
    handles: list[GatewayHandle] = []

    async def start(env: Env, **kw: Any) -> GatewayHandle:
        size = kw.pop("ws_max_size", ws_max_size(env.services.config.limits.max_frame_bytes))
        handle = await start_gateway(env.app, host="127.0.0.1", port=0, ws_max_size=size, **kw)
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        await handle.close()
