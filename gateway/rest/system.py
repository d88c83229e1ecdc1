"""The daemon's status and metrics over REST: `GET /api/status` = `status`, `GET /metrics` = `system/metrics`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.auth import caller_context
from gateway.errors import json_response
from rpc.core.dispatcher import Dispatcher

__all__ = ["SystemApi"]


class SystemApi:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def status(self, request: Request) -> Response:
        context = await caller_context(request, self.dispatcher)
        return json_response(await self.dispatcher.call("status", None, context))

    async def metrics(self, request: Request) -> Response:
        """The Prometheus text format — `system/metrics` (grant system:read, docs/operations.md)."""
        from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4  # what every scraper reads

        context = await caller_context(request, self.dispatcher)
        text = await self.dispatcher.call("system/metrics", None, context)
        return Response(text.encode(), media_type=CONTENT_TYPE_PLAIN_0_0_4)
