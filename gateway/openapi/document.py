"""The OpenAPI 3.1 description served at `/openapi.json` (R-GW-2), generated from models:

* request schemas (path and query parameters, bodies) from the params models the routes validate with — the RPC
  twins' (`rpc/methods/session.py`, `rpc/methods/config.py`), the webhook's `WebhookBody` and `/pair`'s `PairBody`
  (`gateway/rest/`);
* answer schemas from the result models of `gateway/openapi/models.py` (and the config's own `Config` model),
  with every `$defs` hoisted into `components/schemas` (`gateway/openapi/components.py`).

Every model is a msgspec Struct, described by the generator the OpenRPC document shares (rpc/json_schema.py).

So a length, a pattern or a bound is stated once, in the model. What stays written by hand is the part no model
holds: paths and summaries (`gateway/openapi/paths.py`) and which statuses each operation can answer
(`gateway/openapi/operations.py`). A test checks that every documented path exists and vice versa, that no 2xx
answer is a bare object, and that the statuses are listed (test_gateway_openapi.py).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.openapi import models as m
from gateway.openapi.components import OpenApiComponents
from gateway.openapi.paths import PATH_GROUPS

__all__ = ["openapi_endpoint", "openapi_spec"]


def openapi_spec(version: str) -> dict[str, Any]:
    """The document (a fresh copy: generating it walks a dozen models, ~10 ms, once per version)."""
    return copy.deepcopy(_spec(version))


def openapi_endpoint(version: str) -> Callable[[Request], Awaitable[Response]]:
    """`GET /openapi.json` (no token): the document, encoded once, with the app."""
    encoded = orjson.dumps(_spec(version))

    async def openapi(request: Request) -> Response:
        return Response(encoded, media_type="application/json")

    return openapi


@cache
def _spec(version: str) -> dict[str, Any]:
    c = OpenApiComponents()
    c.ref(m.ErrorAnswer)  # every error status refers to it (gateway/openapi/operations.py)
    paths: dict[str, Any] = {}
    for group in PATH_GROUPS:
        paths |= group(c)
    return {
        "openapi": "3.1.0",
        "info": {"title": "zeroclaw gateway", "version": version},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "zc_<64 hex>"}},
            "schemas": dict(sorted(c.schemas.items())),
        },
        "paths": paths,
    }
