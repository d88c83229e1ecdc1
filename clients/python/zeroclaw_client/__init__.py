"""A typed async client for the zeroclaw daemon, generated from its OpenRPC document (docs/protocol.md,
"Clients"): `await connect_unix()` → a `ZeroclawClient` with one `async` method per RPC method."""

from __future__ import annotations

from ._approvals import answer_approvals
from ._channels import default_socket
from ._connect import connect_unix, connect_websocket
from ._generated import ZeroclawClient
from ._transport import ConnectionClosed, RpcError

__all__ = [
    "ConnectionClosed",
    "RpcError",
    "ZeroclawClient",
    "answer_approvals",
    "connect_unix",
    "connect_websocket",
    "default_socket",
]
