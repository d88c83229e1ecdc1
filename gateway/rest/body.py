"""A REST request's body: one JSON object (the 64 KiB bound is `BodyLimit`'s, gateway/middleware.py)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from gateway.errors import ApiError

__all__ = ["json_object"]


async def json_object(request: Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object; `optional`: an empty body is `{}`. Anything else is 400 `invalid_request`."""
    body = await request.body()  # BodyLimit stops this at 64 KiB
    if not body.strip() and optional:
        return {}
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ApiError(400, "invalid_request", "The body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_request", "The body must be a JSON object")
    return data
