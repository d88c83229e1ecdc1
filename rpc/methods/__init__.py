"""Method handlers, one module per family; `build_registry()` declares them all (R-ARCH-2)."""

from __future__ import annotations

from rpc.dispatcher import Registry
from rpc.methods import lifecycle, pairing

__all__ = ["build_registry"]


def build_registry() -> Registry:
    registry = Registry()
    lifecycle.register(registry)
    pairing.register(registry)
    return registry
