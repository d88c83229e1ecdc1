"""Every error kind a method can answer, by `data.kind`: its wire class (code, usual message) and the shape of
its `data`, as the OpenRPC document declares them under `components/errors` (rpc/contract/openrpc.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

from rpc.core import errors as e

__all__ = ["ERROR_KINDS", "ErrorData", "ErrorKind"]


class ErrorData(msgspec.Struct, frozen=True, kw_only=True):
    """Every error's `data`: its `kind`, and what the kind adds. Other keys may follow (a newer daemon's)."""

    kind: str


class FieldError(msgspec.Struct, frozen=True, kw_only=True):
    field: str  # camelCase (snake_case for `file/*`); `env.*` for an entry of a map; "" for the params as a whole
    type: str  # pydantic-compatible: missing, string_type, string_too_long, unknown_agent, …
    message: str | UnsetType = UNSET


class InvalidParamsData(ErrorData, frozen=True):
    errors: list[FieldError]
    limit: int | UnsetType = UNSET  # with string_too_long: the bound
    index: int | UnsetType = UNSET  # `config/set-many`: the entry at fault
    prop: str | UnsetType = UNSET


class ForbiddenData(ErrorData, frozen=True):
    grant: str | UnsetType = UNSET  # the grant that is missing
    prop: str | UnsetType = UNSET  # a config path outside the caller's write paths
    index: int | UnsetType = UNSET
    agent: bool | UnsetType = UNSET  # the caller may not use this agent


class ErrorIdData(ErrorData, frozen=True):
    error_id: Annotated[str, Meta(description="quote it: the daemon's log has the details under it")] | UnsetType = (
        UNSET
    )
    reason: str | UnsetType = UNSET


class LimitData(ErrorData, frozen=True):
    name: str  # which limit: connections, upload_bytes, …
    limit: int


class VersionData(ErrorData, frozen=True):
    supported: list[int]
    requested: int


@dataclass(frozen=True, slots=True)
class ErrorKind:
    error: type[e.RpcError]
    data: type[ErrorData] = ErrorData
    message: str | None = None  # the kind's usual message, when not its class's

    @property
    def text(self) -> str:
        return self.message or self.error.default_message


ERROR_KINDS: dict[str, ErrorKind] = {
    "invalid_params": ErrorKind(e.InvalidParams, InvalidParamsData),
    "internal_error": ErrorKind(e.InternalError, ErrorIdData),
    "storage_unavailable": ErrorKind(e.StorageUnavailable, ErrorIdData),
    "resources_exhausted": ErrorKind(e.ResourcesExhausted, ErrorIdData),
    "auth_required": ErrorKind(e.AuthRequired),
    "forbidden": ErrorKind(e.Forbidden, ForbiddenData),
    "local_only": ErrorKind(e.Forbidden, message="This method is only served on the local endpoint"),
    "version_mismatch": ErrorKind(e.VersionMismatch, VersionData),
    "session_not_found": ErrorKind(e.SessionNotFound),
    "session_changed": ErrorKind(e.SessionNotFound, message="The session was replaced while the call waited"),
    "session_limit": ErrorKind(e.SessionLimit),
    "session_busy": ErrorKind(e.SessionBusy),
    "session_not_owned": ErrorKind(e.SessionNotOwned),
    "upload_not_found": ErrorKind(e.UploadNotFound),
    "limit_exceeded": ErrorKind(e.LimitExceeded, LimitData),
}
_SESSION = ("session_not_found", "session_changed", "session_not_owned")
