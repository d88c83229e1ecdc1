"""The OpenRPC document this daemon serves (R-DISC-1): `rpc.discover` (rpc/methods/discover.py, given it by the
composition root) and `GET /openrpc.json` (gateway/rest.py). Built on the first call, not at start-up, then answered
from the encoded bytes."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from app.services import Services
    from rpc.core.registry import Registry

__all__ = ["encoded_document"]

_DOCUMENTS: weakref.WeakKeyDictionary[Registry, bytes] = weakref.WeakKeyDictionary()


def encoded_document(registry: Registry, services: Services) -> bytes:
    """The document as JSON, made once per registry (the servers it names do not change while the daemon runs:
    the endpoint and the gateway's address need a restart)."""
    encoded = _DOCUMENTS.get(registry)
    if encoded is None:
        from rpc.contract.openrpc import openrpc_document  # the models and the generator: only when asked

        document = openrpc_document(registry, version=services.version, servers=_servers(services))
        encoded = _DOCUMENTS[registry] = orjson.dumps(document)
    return encoded


def _servers(services: Services) -> list[dict[str, str]]:
    # The endpoint by its name only: `/openrpc.json` answers without a token,
    # and a full path names the user.
    servers = [
        {
            "name": "local",
            "url": _endpoint_url(services.paths.endpoint),
            "summary": "The local endpoint (<config dir>/data/daemon.sock, or $ZEROCLAW_SOCKET): NDJSON, owner only",
        }
    ]
    if services.gateway_url is not None:
        rpc_url = services.gateway_url.replace("http", "ws", 1) + "/rpc"
        servers.append({"name": "gateway", "url": rpc_url, "summary": "WebSocket; local-only methods answer -32012"})
    return servers


def _endpoint_url(endpoint: str) -> str:
    if endpoint.startswith("\\\\"):  # a Windows named pipe: \\.\pipe\NAME
        return "npipe:" + endpoint.rsplit("\\", 1)[-1]
    return "unix:" + endpoint.rsplit("/", 1)[-1]
