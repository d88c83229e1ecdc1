"""Every JSON-RPC error the daemon can answer, in one place (SPEC §3.1, R-ERR).

    RpcError                       code    kind
    ├── ParseError                 -32700  parse_error
    ├── InvalidRequest             -32600  invalid_request (also frame_too_large, duplicate_id)
    ├── MethodNotFound             -32601  method_not_found
    ├── InvalidParams              -32602  invalid_params
    ├── InternalError              -32603  internal_error
    │   ├── StorageUnavailable     -32603  storage_unavailable (disk full, read-only, unreachable; R-STORE-3)
    │   └── ResourcesExhausted     -32603  resources_exhausted (out of file descriptors: try again shortly)
    ├── SessionNotFound            -32000  session_not_found (or session_changed)
    ├── SessionLimit               -32001  session_limit
    ├── SessionBusy                -32002  session_busy
    ├── SessionNotOwned            -32003  session_not_owned
    ├── UploadNotFound             -32004  upload_not_found
    ├── LimitExceeded              -32005  limit_exceeded
    ├── AuthRequired               -32010  auth_required
    ├── VersionMismatch            -32011  version_mismatch
    └── Forbidden                  -32012  forbidden (or local_only)

Messages are fixed, human-readable sentences: they never carry frame contents, values or exception text.
Domain exceptions reach the wire through `error_mapper` tables, one entry per concept (docs/protocol.md#errors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

__all__ = [
    "AuthRequired",
    "Forbidden",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LimitExceeded",
    "MethodNotFound",
    "ParseError",
    "ResourcesExhausted",
    "RpcError",
    "SessionBusy",
    "SessionLimit",
    "SessionNotFound",
    "SessionNotOwned",
    "StorageUnavailable",
    "UploadNotFound",
    "VersionMismatch",
    "error_mapper",
]


class RpcError(Exception):
    code: ClassVar[int] = -32603
    kind: ClassVar[str] = "internal_error"
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, kind: str | None = None, **data: Any) -> None:
        self.message = message or self.default_message
        self.data: dict[str, Any] = {"kind": kind or self.kind, **data}
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": self.data}


class ParseError(RpcError):
    code, kind, default_message = -32700, "parse_error", "Parse error: the frame is not valid UTF-8 JSON"


class InvalidRequest(RpcError):
    code, kind, default_message = -32600, "invalid_request", "Invalid request"


class MethodNotFound(RpcError):
    code, kind, default_message = -32601, "method_not_found", "Method not found"


class InvalidParams(RpcError):
    code, kind, default_message = -32602, "invalid_params", "Invalid params"


class InternalError(RpcError):
    code, kind, default_message = -32603, "internal_error", "Internal error"


class StorageUnavailable(InternalError):
    """The database refused a write or could not be reached (`data.reason`: disk_full, read_only, locked,
    io_error, corrupt, unreachable; `data.error_id` to quote). Nothing the call committed before is lost."""

    kind = "storage_unavailable"
    default_message = "Storage unavailable: the database cannot be written or reached right now"


class ResourcesExhausted(InternalError):
    """The daemon ran out of file descriptors while serving the call (`data.reason`: file_descriptors;
    `data.error_id`). A condition, not a bug: calls succeed again once descriptors free up."""

    kind = "resources_exhausted"
    default_message = "The daemon is out of file descriptors; try again shortly"


class SessionNotFound(RpcError):
    code, kind, default_message = -32000, "session_not_found", "Session not found"


class SessionLimit(RpcError):
    code, kind, default_message = -32001, "session_limit", "Live-session limit reached"


class SessionBusy(RpcError):
    code, kind, default_message = -32002, "session_busy", "A turn is already running on this session"


class SessionNotOwned(RpcError):
    code, kind, default_message = -32003, "session_not_owned", "The session belongs to another principal"


class UploadNotFound(RpcError):
    code, kind, default_message = -32004, "upload_not_found", "Upload not found"


class LimitExceeded(RpcError):
    code, kind, default_message = -32005, "limit_exceeded", "Limit exceeded"


class AuthRequired(RpcError):
    code, kind, default_message = -32010, "auth_required", "Authentication required"


class VersionMismatch(RpcError):
    code, kind, default_message = -32011, "version_mismatch", "Unsupported protocol version"


class Forbidden(RpcError):
    code, kind, default_message = -32012, "forbidden", "Forbidden"


def error_mapper(table: Mapping[type[Exception], Callable[[Any], RpcError]]) -> Callable[[Exception], RpcError | None]:
    """A domain -> wire mapper with one entry per concept: the entry of the nearest class in `exc`'s MRO, so a
    subclass (`SessionChanged` under `SessionNotFound`) shares its concept's entry unless it has its own."""

    def map_error(exc: Exception) -> RpcError | None:
        for cls in type(exc).__mro__:
            to_wire = table.get(cls)
            if to_wire is not None:
                return to_wire(exc)
        return None

    return map_error
