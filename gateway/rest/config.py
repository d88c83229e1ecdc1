"""The config over REST: `GET /api/config[?prop=]` = `config/get`, `PUT /api/config/{prop}` = `config/set`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.auth import caller_context
from gateway.errors import json_response
from gateway.rest.body import json_object
from rpc.core.dispatcher import Dispatcher

__all__ = ["ConfigApi"]


class ConfigApi:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def get_config(self, request: Request) -> Response:
        """The whole config (secrets masked), or `{prop, value}` with `?prop=` — `config/get`."""
        context = await caller_context(request, self.dispatcher)
        prop = request.query_params.get("prop")
        return json_response(await self.dispatcher.call("config/get", {"prop": prop}, context))

    async def put_config(self, request: Request) -> Response:
        """`PUT /api/config/{prop}` with `{"value": …}` → `{prop, set: true}` — `config/set`."""
        context = await caller_context(request, self.dispatcher)
        body = await json_object(request)
        params = {"prop": request.path_params["prop"], **({"value": body["value"]} if "value" in body else {})}
        return json_response(await self.dispatcher.call("config/set", params, context))
