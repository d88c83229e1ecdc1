"""Method handlers, one module per family; `build_registry()` declares them all (R-ARCH-2)."""

from __future__ import annotations

from rpc.core.boundary import ErrorMapper
from rpc.core.registry import Registry
from rpc.methods import (
    agents,
    branching,
    config,
    config_schema,
    discover,
    files,
    lifecycle,
    logs,
    mcp,
    models,
    pairing,
    permissions,
    session,
)

__all__ = ["ERROR_MAPPERS", "build_registry"]

# Each family maps its domain exceptions to protocol errors (`config_schema` raises config's).
ERROR_MAPPERS: tuple[ErrorMapper, ...] = (config.map_config_error, session.map_session_error, files.map_file_error)


def build_registry() -> Registry:
    registry = Registry()
    for family in (
        lifecycle,
        discover,
        pairing,
        config,
        config_schema,
        session,
        agents,
        logs,
        files,
        models,
        permissions,
        branching,
    ):
        family.register(registry)
    mcp.register(registry)  # R-MCP: tools/list, mcp/status
    return registry
