"""`logs/subscribe` (R-ZC-4): from its answer until the connection ends, the daemon's own log records reach the
caller as `logs/event` notifications (`rpc.core.log_stream`; docs/protocol.md)."""

from __future__ import annotations

from rpc.core.answers import Answer
from rpc.core.connection import Connection
from rpc.core.context import CallContext
from rpc.core.log_stream import stream_for
from rpc.core.registry import AfterReply, Contract, NoParams, Registry

__all__ = ["LogSubscription", "register"]


class LogSubscription(Answer, frozen=True):
    subscribed: bool  # false when the daemon's log stream is not installed (an embedded dispatcher)


def register(registry: Registry) -> None:
    answers = Contract("Receive the daemon's log records as logs/event", LogSubscription, (), ("logs/event",))
    registry.method("logs/subscribe", params=NoParams, grant="system:read", contract=answers)(subscribe)


async def subscribe(ctx: CallContext, params: NoParams) -> AfterReply | dict[str, bool]:
    client = ctx.client
    stream = stream_for(ctx.daemon_view)
    if stream is None or not isinstance(client, Connection):
        # An HTTP call has no connection to stream to (its answer is the HTTP response).
        return {"subscribed": False}
    # Streaming starts once the answer is on its way, so no event overtakes it.
    return AfterReply({"subscribed": True}, lambda: stream.subscribe(client))
