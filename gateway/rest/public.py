"""What answers without a token besides pairing: liveness and the JSON-RPC surface's OpenRPC document (the
OpenAPI one is `gateway/openapi/document.py`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.errors import json_response
from rpc.contract.discover import encoded_document
from rpc.core.dispatcher import Dispatcher

__all__ = ["PublicApi"]


class PublicApi:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def health(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def openrpc(self, request: Request) -> Response:
        """`GET /openrpc.json`, as `rpc.discover` answers it; built on the first ask (either's), not with the app."""
        return Response(
            encoded_document(self.dispatcher.registry, self.dispatcher.services), media_type="application/json"
        )
