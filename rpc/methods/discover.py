"""`rpc.discover` (R-DISC-1): the OpenRPC document of this daemon, answered before `initialize` too, on every
surface. The document is the contract layer's (`rpc.contract.discover`), above this one: the composition root hands
it to the dispatcher, and the handler reads it from there (`DaemonView.contract`)."""

from __future__ import annotations

import orjson

from rpc.core.context import CallContext
from rpc.core.registry import NoParams, Registry

__all__ = ["register"]


def register(registry: Registry) -> None:
    registry.method("rpc.discover", params=NoParams, grant=None, requires_init=False)(discover)


def discover(ctx: CallContext, params: NoParams) -> orjson.Fragment:
    return orjson.Fragment(ctx.daemon_view.contract())
