"""`rpc.discover` (R-DISC-1): the OpenRPC document of this daemon, answered before `initialize` too, on every
surface. The document is the contract layer's (`rpc.contract.discover`), above this one: the composition root hands
it to the dispatcher, and the handler reads it from there (`DaemonView.contract`)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from rpc.core.context import CallContext
from rpc.core.registry import Contract, NoParams, Registry

__all__ = ["OpenRpcDocument", "register"]


class OpenRpcDocument(msgspec.Struct, frozen=True, kw_only=True):
    """An OpenRPC 1.3.2 document (this one); its meta-schema is https://meta.open-rpc.org/."""

    openrpc: Literal["1.3.2"]
    info: dict[str, Any]
    methods: list[dict[str, Any]]
    servers: list[dict[str, Any]] | UnsetType = UNSET
    components: dict[str, Any] | UnsetType = UNSET


def register(registry: Registry) -> None:
    answers = Contract("This OpenRPC document (answered before initialize too)", OpenRpcDocument)
    registry.method("rpc.discover", params=NoParams, grant=None, requires_init=False, contract=answers)(discover)


def discover(ctx: CallContext, params: NoParams) -> orjson.Fragment:
    return orjson.Fragment(ctx.daemon_view.contract())
