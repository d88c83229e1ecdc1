"""`file/attach` and `file/upload/{begin,chunk,commit}` (SPEC §8): thin adapters over `app.files.FileService`.

Inputs accept snake_case and camelCase (the `Params` base); outputs are snake_case exactly as §8 shows
(R-WIRE-8). The upload methods are local-only (R-FILE-5: the registry answers WebSocket peers -32012
`local_only`). Uploads are keyed by the caller's `ClientChannel` (its connection); `connection_closed` is the
dispatcher's close listener that discards them (R-FILE-3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from msgspec import Meta

from rpc.core.answers import SnakeAnswer, nested_model
from rpc.core.context import CallContext
from rpc.core.errors import InternalError, InvalidParams, LimitExceeded, RpcError, UploadNotFound
from rpc.core.registry import Contract, Params, Registry, SessionId
from rpc.core.wire import to_wire
from rpc.methods.session import SESSION_ERRORS, files_of

# `app.files` is imported by its first call (`Services.file_service`), not at start-up.
if TYPE_CHECKING:
    from app.auth.policy import Principal
    from app.files.service import FileService
    from rpc.core.connection import Connection

__all__ = ["GRANT", "MAX_ATTACHMENTS", "connection_closed", "map_file_error", "register"]

GRANT = "files:create"
MAX_ATTACHMENTS = 64  # `app.files.service.MAX_ATTACHMENTS` (a test keeps them equal)
_MAX_NAME = 1024  # characters; the service enforces the 255-byte UTF-8 rule with its own error
_UploadId = Annotated[str, Meta(min_length=1, max_length=64)]


class _FileParams(Params, frozen=True, rename=None):
    """Errors name fields in snake_case, like everything else of the file/* methods (R-WIRE-8); camelCase keys are
    still accepted (`rpc.core.registry.validate`)."""


class AttachFile(_FileParams, frozen=True):
    data_b64: str
    filename: Annotated[str, Meta(max_length=_MAX_NAME)] | None = None
    mime_type: Annotated[str, Meta(max_length=_MAX_NAME)] | None = None


class AttachParams(_FileParams, frozen=True):
    session_id: SessionId
    files: Annotated[list[AttachFile], Meta(min_length=1, max_length=MAX_ATTACHMENTS)]


class BeginParams(_FileParams, frozen=True):
    session_id: SessionId
    size_bytes: Annotated[int, Meta(ge=0)]
    filename: Annotated[str, Meta(max_length=_MAX_NAME)] | None = None
    sha256: Annotated[str, Meta(max_length=128)] | None = None
    mime_type: Annotated[str, Meta(max_length=_MAX_NAME)] | None = None  # optional; guessed from filename


class ChunkParams(_FileParams, frozen=True):
    upload_id: _UploadId
    offset: Annotated[int, Meta(ge=0)]
    data_b64: str  # the frame limit bounds it; the service refuses > 1 MiB decoded without decoding long ones


class CommitParams(_FileParams, frozen=True):
    upload_id: _UploadId


# -- results (snake_case, as the params), made on first use: `app.files` is imported only there


@functools.cache
def attach_entry() -> type[msgspec.Struct]:
    """The answer of `file/upload/commit` and each of `file/attach`'s."""
    from app.files.store import AttachEntry

    return nested_model(AttachEntry, snake=True)


@functools.cache
def upload_begun() -> type[msgspec.Struct]:
    from app.files.service import BeginResult

    return nested_model(BeginResult, snake=True)


class ChunkReceived(SnakeAnswer, frozen=True):
    upload_id: str
    received_bytes: int


@functools.cache
def attached() -> type[msgspec.Struct]:
    entry: Any = attach_entry()
    return msgspec.defstruct(
        "Attached", [("files", list[entry])], module=__name__, forbid_unknown_fields=True, frozen=True
    )


def register(registry: Registry) -> None:
    c, method = Contract, registry.method
    one_call = c(
        "Attach small files to a session in one call (base64)",
        attached,
        ("forbidden", "limit_exceeded", *SESSION_ERRORS),
        storage=True,
    )
    method("file/attach", params=AttachParams, grant=GRANT, contract=one_call)(attach)
    begun = c("Begin a chunked upload to a session", upload_begun, ("forbidden", "limit_exceeded", *SESSION_ERRORS))
    method("file/upload/begin", params=BeginParams, grant=GRANT, local_only=True, contract=begun)(begin)
    chunked = c("Send the next chunk of an upload", ChunkReceived, ("upload_not_found", "limit_exceeded"))
    method("file/upload/chunk", params=ChunkParams, grant=GRANT, local_only=True, contract=chunked)(chunk)
    committed = c(
        "Finish an upload: checked, stored, attached to its session",
        attach_entry,
        ("upload_not_found", "limit_exceeded", *SESSION_ERRORS),
        storage=True,
    )
    method("file/upload/commit", params=CommitParams, grant=GRANT, local_only=True, contract=committed)(commit)


def map_file_error(exc: Exception) -> RpcError | None:
    file_errors = sys.modules.get("app.files.errors")
    if file_errors is None:  # not loaded, so nothing raised one of its errors
        return None
    if isinstance(exc, file_errors.InvalidUpload):
        error = {"field": exc.field, "type": exc.type, "message": exc.message}
        return InvalidParams(exc.message, errors=[error], **exc.data)
    if isinstance(exc, file_errors.UploadNotFound):
        return UploadNotFound(exc.message)
    if isinstance(exc, file_errors.UploadLimit):
        return LimitExceeded(exc.message, name=exc.name, limit=exc.limit)
    if isinstance(exc, file_errors.StorageFailed):
        return InternalError(exc.message, reason="storage")
    return None


def connection_closed(connection: Connection) -> None:
    """The dispatcher's close listener: discard what the connection staged (R-FILE-3). Uploads are keyed by the
    caller's `ClientChannel`, which for a connection is the connection itself."""
    files: FileService | None = getattr(connection.context.services, "files", None)
    if files is not None:
        files.connection_closed(connection)


def _files(ctx: CallContext) -> FileService:
    return files_of(ctx.services)


def _verifier(ctx: CallContext) -> Callable[[], Principal]:
    """Re-checks the caller's credential and `files:create` under the policy in force when the commit step
    calls it (a revoked token → -32010, a removed grant → -32012), and returns the principal it resolved."""

    def verify() -> Principal:
        return ctx.recheck(GRANT)

    return verify


async def attach(ctx: CallContext, params: AttachParams) -> dict[str, Any]:
    from app.files.service import IncomingFile

    files = [IncomingFile(f.data_b64, f.filename, f.mime_type) for f in params.files]
    # A refusal raised here (-32010, -32012) is audited once, where the connection answers it (R-SEC-3).
    entries = await _files(ctx).attach(ctx.principal, params.session_id, files, _verifier(ctx))
    return {"files": to_wire(entries, snake=True)}


async def begin(ctx: CallContext, params: BeginParams) -> dict[str, Any]:
    result = await _files(ctx).begin(
        ctx.client,
        ctx.principal,
        params.session_id,
        size_bytes=params.size_bytes,
        filename=params.filename,
        sha256=params.sha256,
        mime_type=params.mime_type,
    )
    return to_wire(result, snake=True)  # type: ignore[no-any-return]


def chunk(ctx: CallContext, params: ChunkParams) -> dict[str, Any]:
    # Synchronous on purpose: runs inline on the read path, so chunks of one connection apply in order.
    received = _files(ctx).chunk(ctx.client, params.upload_id, params.offset, params.data_b64)
    return {"upload_id": params.upload_id, "received_bytes": received}


async def commit(ctx: CallContext, params: CommitParams) -> dict[str, Any]:
    entry = await _files(ctx).commit(ctx.client, params.upload_id, _verifier(ctx))
    return to_wire(entry, snake=True)  # type: ignore[no-any-return]
