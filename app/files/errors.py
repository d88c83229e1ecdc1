"""File failures as the domain names them; `rpc/methods/files.py` maps each to its JSON-RPC code (R-ERR).

Session-shaped failures reuse `app.sessions.errors` (`SessionNotFound`, `SessionChanged`, `SessionNotOwned`), which
the session family maps (-32000, -32000 `session_changed`, -32003), and `AgentNotAllowed`, a policy `Forbidden`
(-32012, mapped with the config family).
No message or detail ever carries uploaded bytes, a base64 string or a file name (R-SEC-6).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FileError", "InvalidUpload", "StorageFailed", "UploadLimit", "UploadNotFound"]


class FileError(Exception):
    message = "file error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message


class InvalidUpload(FileError):
    """Bad params or a rejected chunk/commit (-32602). `field` and `type` name what failed; `data` adds
    context such as `limit` or `received_bytes` (never a value the caller sent)."""

    message = "Invalid upload"

    def __init__(self, message: str, *, field: str, type: str, **data: Any) -> None:
        super().__init__(message)
        self.field = field
        self.type = type
        self.data = data


class UploadNotFound(FileError):
    """Unknown, expired, discarded, or another connection's upload id (-32004)."""

    message = "Upload not found"


class UploadLimit(FileError):
    """A per-connection or daemon-wide upload limit (-32005 with `data.name`, `data.limit`)."""

    message = "Upload limit exceeded"

    def __init__(self, message: str, *, name: str, limit: int) -> None:
        super().__init__(message)
        self.name = name
        self.limit = limit


class StorageFailed(FileError):
    """The workspace could not be written (-32603); the reason goes to the daemon log only."""

    message = "The file could not be stored"
