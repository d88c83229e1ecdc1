"""The daemon-wide side of the protocol: which connections are open, the connection cap, error mapping.

Transports call `accept()` for every new peer and get a `Connection` (or `None` when the cap refused it);
the connection calls `release()` once when it ends.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.audit import AuditLog
from app.config.schema import Limits
from app.storage.errors import unavailable_reason
from rpc.connection import Connection
from rpc.dispatcher import Registry
from rpc.envelope import encode_error
from rpc.errors import InternalError, LimitExceeded, RpcError, StorageUnavailable
from rpc.transports.base import FrameTransport, Peer

if TYPE_CHECKING:
    from app.services import Services

__all__ = ["RpcServer", "storage_unavailable"]

log = logging.getLogger("zeroclaw.rpc")

ErrorMapper = Callable[[Exception], RpcError | None]


class RpcServer:
    def __init__(
        self,
        registry: Registry,
        services: Services,
        audit: AuditLog,
        *,
        limits: Callable[[], Limits],
        on_count_change: Callable[[int], None] = lambda _count: None,
    ) -> None:
        self.registry = registry
        self.services = services
        self.audit = audit
        self._limits = limits
        self._on_count_change = on_count_change
        self._error_mappers: list[ErrorMapper] = []
        self._close_listeners: list[Callable[[Connection], None]] = []
        self.connections: set[Connection] = set()

    @property
    def limits(self) -> Limits:
        """The limits in force now (config changes apply to the next connection or call)."""
        return self._limits()

    def accept(self, transport: FrameTransport, peer: Peer) -> Connection | None:
        limits = self.limits
        if len(self.connections) >= limits.max_connections:
            refusal = LimitExceeded("Too many connections", name="connections", limit=limits.max_connections)
            transport.send(encode_error(None, refusal))
            transport.close()
            self.audit.record("denied", peer.label, None)
            return None
        connection = Connection(self, transport, peer, max_inflight=limits.max_inflight_per_connection)
        self.connections.add(connection)
        self.audit.record("connect", peer.label, None)
        self._on_count_change(len(self.connections))
        return connection

    def release(self, connection: Connection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            for listener in self._close_listeners:
                listener(connection)
            self.audit.record("disconnect", connection.peer.label, connection.principal_id)
            self._on_count_change(len(self.connections))

    def add_close_listener(self, listener: Callable[[Connection], None]) -> None:
        """Run `listener(connection)` when a connection ends (e.g. to discard what it staged)."""
        self._close_listeners.append(listener)

    def add_error_mapper(self, mapper: ErrorMapper) -> None:
        """Let a method family translate its domain exceptions into protocol errors."""
        self._error_mappers.append(mapper)

    def to_rpc_error(self, exc: BaseException) -> RpcError:
        if isinstance(exc, RpcError):
            return exc
        if isinstance(exc, Exception):
            for mapper in self._error_mappers:
                mapped = mapper(exc)
                if mapped is not None:
                    return mapped
        unavailable = storage_unavailable(exc)  # after the domain's own mappers: one may wrap a driver error
        if unavailable is not None:
            return unavailable
        error_id = uuid.uuid4().hex[:16]
        # The traceback stays in the daemon log; the peer only gets the id to quote.
        log.error("unexpected failure error_id=%s", error_id, exc_info=exc)
        return InternalError(error_id=error_id)

    def close_all(self) -> None:
        for connection in list(self.connections):
            connection.transport.close()


def storage_unavailable(exc: BaseException) -> StorageUnavailable | None:
    """`-32603 storage_unavailable` when `exc` says the database refused or cannot be reached (R-STORE-3)."""
    reason = unavailable_reason(exc)
    if reason is None:
        return None
    error_id = uuid.uuid4().hex[:16]
    # An expected condition, not a bug: one line per call and no traceback (a full disk fails every write).
    log.warning("storage unavailable (%s) error_id=%s: %s", reason, error_id, type(exc).__name__)
    return StorageUnavailable(reason=reason, error_id=error_id)
