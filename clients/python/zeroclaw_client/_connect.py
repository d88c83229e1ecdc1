"""Open a connection and sign in with `initialize`: the one step every client makes first."""

from __future__ import annotations

import os
from typing import Any

from ._channels import UnixChannel, WebSocketChannel, default_socket
from ._generated import ClientInfo, ZeroclawClient

__all__ = ["connect_unix", "connect_websocket"]

CLIENT_INFO: ClientInfo = {"name": "zeroclaw-client", "version": "1"}


async def connect_unix(
    path: str | os.PathLike[str] | None = None,
    *,
    token: str | None = None,
    client_info: ClientInfo | None = None,
    capabilities: dict[str, Any] | None = None,
) -> ZeroclawClient:
    """A client on the daemon's local endpoint (default: `default_socket()`), initialized. The owner of the socket
    needs no `token`; `capabilities={"elicitation": {}}` announces that `on_elicitation_create` answers."""
    client = ZeroclawClient(await UnixChannel.open(default_socket() if path is None else path))
    return await _initialized(client, token, client_info, capabilities)


async def connect_websocket(
    url: str,
    *,
    token: str,
    client_info: ClientInfo | None = None,
    capabilities: dict[str, Any] | None = None,
) -> ZeroclawClient:
    """A client on the gateway's WebSocket (`ws://HOST:PORT/rpc`), signed in with a paired `token`."""
    client = ZeroclawClient(await WebSocketChannel.open(url))
    return await _initialized(client, token, client_info, capabilities)


async def _initialized(
    client: ZeroclawClient, token: str | None, info: ClientInfo | None, capabilities: dict[str, Any] | None
) -> ZeroclawClient:
    try:
        await client.initialize(
            protocol_version=1, auth_token=token, client_info=info or CLIENT_INFO, client_capabilities=capabilities
        )
    except BaseException:
        await client.close()
        raise
    return client
