"""`GET /api/sessions/{id}/events` (R-ECO-2): a session's updates as Server-Sent Events, for REST consumers.

    id:    the update's `seq` (R-MULTI-1)
    data:  the `session/update` params, as a JSON-RPC client gets them
    event: `gap` (data `{"seq"}`) when the updates after `Last-Event-ID` are no longer retained (or it is beyond
           the session's last: an id from before a restart that lost them); then the live ones

It is `session/attach` through the dispatcher (R-ARCH-3: its grant `sessions:read`, ownership, and the replay of
the R-MULTI-2 buffer from `afterSeq` = `Last-Event-ID`) with a channel that writes the stream. The guards are the
WebSocket's: the bearer token (also `?token=`, since a browser's `EventSource` sends no headers), the Host allowlist
(middleware) and the Origin check; and its stall rule: a reader that takes nothing for `outbound_stall_secs` while
updates wait is cut off (it reconnects with `Last-Event-ID` and is told `gap` if it fell too far behind).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.auth import caller_context
from gateway.errors import ApiError
from gateway.rest.stream_channel import StreamChannel, count_stall
from gateway.ws import origin_allowed
from rpc.core.context import CallContext
from rpc.core.dispatcher import Dispatcher
from rpc.core.errors import RpcError

__all__ = ["EventsApi", "SseChannel"]

_RETRY_MS = 1000  # how soon an SSE client reconnects after the stream is cut
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class SseChannel(StreamChannel):
    """A follower (not one-shot: attach replays to it and it watches) that reads the session's updates as SSE."""

    __slots__ = ()

    one_shot = False


def sse_event(frame: bytes) -> bytes:
    """One `session/update` notification frame as an SSE event: `id:` its seq, `data:` its params."""
    params = orjson.loads(frame).get("params") or {}
    return b"id: %d\ndata: %s\n\n" % (params.get("seq", 0), orjson.dumps(params))


def _beyond(exc: RpcError) -> bool:
    errors = exc.data.get("errors") or []
    return any(isinstance(e, dict) and e.get("type") == "seq_out_of_range" for e in errors)


def _last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ApiError(400, "invalid_params", "Last-Event-ID must be a seq (an integer)") from None
    if value < 0:
        raise ApiError(400, "invalid_params", "Last-Event-ID must be a seq (an integer)")
    return value


class EventsApi:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def events(self, request: Request) -> Response:
        if not origin_allowed(request.headers.get("origin"), request.headers.get("host"), request.url.scheme):
            raise ApiError(403, "forbidden", "Origin not allowed")
        context = await caller_context(request, self.dispatcher, query_token=True)
        after = _last_event_id(request)
        stall_secs = self.dispatcher.limits.outbound_stall_secs
        channel = SseChannel(context.principal.id, stall_secs, count_stall(self.dispatcher, request), bounded=False)
        context.client = channel
        params: dict[str, Any] = {"sessionId": request.path_params["id"]}
        if after is not None:
            params["afterSeq"] = after
        try:  # refusals (401 above, 403, 404) are answered before the stream starts
            try:
                attached = await self.dispatcher.call("session/attach", params, context)
            except RpcError as exc:
                if after is None or not _beyond(exc):
                    raise
                # an id from another life of the session (or another session): what it had is gone, say so
                params.pop("afterSeq")
                attached = {**await self.dispatcher.call("session/attach", params, context), "gap": True}
        except BaseException:
            channel.drop()
            raise
        channel.bounded = True
        return StreamingResponse(
            self._stream(context, channel, attached), media_type="text/event-stream", headers=_HEADERS
        )

    async def _stream(
        self, context: CallContext, channel: SseChannel, attached: dict[str, Any]
    ) -> AsyncIterator[bytes]:
        try:
            # `retry:` rides on the first event (a block of its own is an empty event to some clients): a reader
            # cut off comes back after a second, where a browser would wait about 3 s
            retry = b"retry: %d\n" % _RETRY_MS
            if attached.get("gap"):
                yield retry + b"event: gap\ndata: %s\n\n" % orjson.dumps({"seq": attached["seq"]})
                retry = b""
            else:
                yield b": attached\n\n"  # the headers go out now: the client knows it is following
            while frames := await channel.take():
                yield retry + b"".join(map(sse_event, frames))
                retry = b""
        finally:
            channel.drop()
            with suppress(Exception):
                await self.dispatcher.call("session/detach", {"sessionId": attached["sessionId"]}, context)
