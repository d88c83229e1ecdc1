"""The one exception → error → audit boundary (R-WIRE-4, R-SEC-3, R-STORE-3).

Whatever a handler raises leaves through here, on every surface: an `RpcError` as it is, a domain exception
through its family's mapper (`rpc.methods.ERROR_MAPPERS`), a refused or unreachable database as
`storage_unavailable`, a full file table as `resources_exhausted`, anything else as `internal_error` with an id to
quote (the traceback stays in the log).
Every `-32010` and `-32012` answer is audited as `denied`, once, here.
"""

from __future__ import annotations

import errno
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Final

from app.audit import AuditLog
from app.exception_chain import causes
from app.storage.errors import unavailable_reason
from rpc.core.errors import AuthRequired, Forbidden, InternalError, ResourcesExhausted, RpcError, StorageUnavailable

__all__ = ["ErrorBoundary", "ErrorMapper", "resources_exhausted", "storage_unavailable"]

log = logging.getLogger("zeroclaw.rpc")

ErrorMapper = Callable[[Exception], RpcError | None]
OTHER_METHOD: Final = "other"  # the `method` label of an error for a frame that named no registered method


class ErrorBoundary:
    """Maps what a call raised to the error it is answered with, and counts those answers (`GET /metrics`)."""

    def __init__(self, audit: AuditLog) -> None:
        self._audit = audit
        self._mappers: list[ErrorMapper] = []
        self.answered: Counter[tuple[str, str]] = Counter()  # by (method label, error kind)

    def add_mapper(self, mapper: ErrorMapper) -> None:
        """Let a method family translate its domain exceptions into protocol errors."""
        self._mappers.append(mapper)

    def to_rpc_error(self, exc: BaseException) -> RpcError:
        if isinstance(exc, RpcError):
            return exc
        if isinstance(exc, Exception):
            for mapper in self._mappers:
                mapped = mapper(exc)
                if mapped is not None:
                    return mapped
        unavailable = storage_unavailable(exc)  # after the domain's own mappers: one may wrap a driver error
        if unavailable is not None:
            return unavailable
        exhausted = resources_exhausted(exc)
        if exhausted is not None:
            return exhausted
        error_id = uuid.uuid4().hex[:16]
        # The traceback stays in the daemon log; the peer only gets the id to quote.
        log.error("unexpected failure error_id=%s", error_id, exc_info=exc)
        return InternalError(error_id=error_id)

    def answer(
        self, exc: BaseException, peer_label: str, principal_id: str | None, method: str | None = None
    ) -> RpcError:
        """The error a caller is answered for `exc`: audited when it is a refusal, counted when it answers a call of
        `method`."""
        error = self.to_rpc_error(exc)
        if isinstance(error, AuthRequired | Forbidden):
            self._audit.record("denied", peer_label, principal_id)
        if method is not None:
            self.answered[method, error.data["kind"]] += 1
        return error


_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})


def resources_exhausted(exc: BaseException) -> ResourcesExhausted | None:
    """`-32603 resources_exhausted` when `exc` (or what caused it) is the process or system file table being full:
    a condition of the moment, answered clearly and logged in one line without a traceback (benchmarks/exhaustion.py
    found a turn at the limit answered as an unexpected failure)."""
    for seen in causes(exc):
        if isinstance(seen, OSError) and seen.errno in _OUT_OF_DESCRIPTORS:
            error_id = uuid.uuid4().hex[:16]
            log.warning("out of file descriptors error_id=%s", error_id)
            return ResourcesExhausted(reason="file_descriptors", error_id=error_id)
    return None


def storage_unavailable(exc: BaseException) -> StorageUnavailable | None:
    """`-32603 storage_unavailable` when `exc` says the database refused or cannot be reached (R-STORE-3)."""
    reason = unavailable_reason(exc)
    if reason is None:
        return None
    error_id = uuid.uuid4().hex[:16]
    # Expected, not a bug: one line, no traceback (a full disk fails every write).
    log.warning("storage unavailable (%s) error_id=%s: %s", reason, error_id, type(exc).__name__)
    return StorageUnavailable(reason=reason, error_id=error_id)
