"""The files service (SPEC §8): `file/attach`, the chunked upload (`begin` / `chunk` / `commit`), the per-connection
and daemon-wide limits, idle expiry, and the attachment markers `session/prompt` appends.

Surfaces pass an opaque `owner_key` (the connection) for everything upload-related: an upload belongs to the
key that began it (R-FILE-3) and `connection_closed(key)` discards what that key staged. They also pass a
`Verify` callable that re-checks the caller's credential and `files:create` under the policy in force at the
moment the commit step calls it (see `app.files.store`).

Staged bytes go to anonymous temporary files in `staging_dir` (memory when it is None: tests); every byte of
a declared payload plus its metadata is charged to the daemon-wide budget at `begin` (R-FILE-4).
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import logging
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.auth.policy import Principal
from app.config.schema import Limits
from app.files.budget import UploadBudget, metadata_cost
from app.files.errors import InvalidUpload, StorageFailed, UploadLimit, UploadNotFound
from app.files.naming import (
    CHUNK_BYTES,
    MAX_BYTES,
    attachment_marker,
    check_filename,
    check_mime,
    check_sha256,
    check_size,
)
from app.files.staging import FileStaging, MemoryStaging, StagedUpload, Staging
from app.files.store import AttachEntry, FileStore, Payload, SessionBinding, Verify, uploads_dir_of
from app.sessions.errors import AgentNotAllowed, SessionChanged
from app.sessions.registry import SessionRegistry

__all__ = ["MAX_ATTACHMENTS", "BeginResult", "FileService", "IncomingFile", "decode_b64", "staging_dir_for"]

log = logging.getLogger("zeroclaw.files")

MAX_ATTACHMENTS = 64  # files per `file/attach`, attachments per `session/prompt`
_REMEMBERED_COMMITS = 8  # per connection: a retried `commit` after a lost response gets the same entry


def _encoded_len(size: int) -> int:
    return 4 * -(-size // 3)


def decode_b64(text: str, *, field: str, limit: int, too_large: str) -> bytes:
    """Strict standard base64 (padding required, no whitespace); over `limit` decoded bytes → InvalidUpload.

    The length is judged before decoding, so an oversize string is refused without materializing its bytes.
    """
    if len(text) > _encoded_len(limit):
        raise InvalidUpload(f"more than {limit} bytes after base64 decoding", field=field, type=too_large, limit=limit)
    try:
        data = binascii.a2b_base64(text, strict_mode=True)  # what b64decode(validate=True) checks, minus a regex
    except (binascii.Error, ValueError):
        raise InvalidUpload("not valid base64", field=field, type="invalid_base64") from None
    if len(data) > limit:  # the last base64 quantum may still carry up to 2 bytes too many
        raise InvalidUpload(f"more than {limit} bytes after base64 decoding", field=field, type=too_large, limit=limit)
    return data


@dataclass(frozen=True, slots=True)
class IncomingFile:
    data_b64: str
    filename: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class BeginResult:
    upload_id: str
    chunk_bytes: int = CHUNK_BYTES
    max_bytes: int = MAX_BYTES


class FileService:
    def __init__(
        self,
        sessions: SessionRegistry,
        limits: Callable[[], Limits],
        *,
        staging_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._limits = limits
        self._staging_dir = staging_dir
        self._clock = clock
        self.store = FileStore(lambda: sessions.live)
        self.budget = UploadBudget(lambda: limits().upload_budget_bytes)
        self._uploads: dict[str, StagedUpload] = {}
        self._by_owner: dict[object, dict[str, StagedUpload]] = {}
        self._committing: dict[str, asyncio.Lock] = {}
        self._committed: dict[object, OrderedDict[str, AttachEntry]] = {}
        self._sweeper: asyncio.TimerHandle | None = None

    # -- file/attach -------------------------------------------------------------------------------

    async def attach(
        self, principal: Principal, session_id: str, files: Sequence[IncomingFile], verify: Verify
    ) -> list[AttachEntry]:
        """Store every file whole through the commit step (R-FILE-1, R-FILE-6)."""
        for i, f in enumerate(files):
            check_filename(f.filename, f"files.{i}.filename")
            check_mime(f.mime_type, f"files.{i}.mime_type")
        payloads = await asyncio.to_thread(_decode_all, files)
        binding = await self._bind(principal, session_id)
        return await self.store.store(binding, verify, payloads)

    # -- file/upload/* -----------------------------------------------------------------------------

    async def begin(
        self,
        owner_key: object,
        principal: Principal,
        session_id: str,
        *,
        size_bytes: int,
        filename: str | None = None,
        sha256: str | None = None,
        mime_type: str | None = None,
    ) -> BeginResult:
        check_size(size_bytes)
        check_filename(filename)
        sha256 = check_sha256(sha256)
        check_mime(mime_type)
        binding = await self._bind(principal, session_id)
        # -- synchronous from here on, so two connections racing for the budget are served one at a time --
        limits, now = self._limits(), self._clock()
        mine = self._by_owner.get(owner_key, {})
        if len(mine) >= limits.max_uploads_per_connection:
            self.reclaim_idle()
            mine = self._by_owner.get(owner_key, {})
            if len(mine) >= limits.max_uploads_per_connection:
                raise UploadLimit(
                    "Too many staged uploads on this connection",
                    name="uploads_per_connection",
                    limit=limits.max_uploads_per_connection,
                )
        upload_id = "up_" + secrets.token_hex(16)
        cost = size_bytes + metadata_cost(
            session_id, binding.owner, binding.agent_alias, filename, sha256, mime_type, upload_id
        )
        charge = self.budget.charge(cost)
        if charge is None:
            self.reclaim_idle()  # every upload idle beyond the limit, on any connection, then one retry
            charge = self.budget.charge(cost)
            if charge is None:
                raise UploadLimit("The daemon's upload budget is full", name="upload_budget", limit=self.budget.limit)
        staging: Staging = FileStaging(self._staging_dir) if self._staging_dir is not None else MemoryStaging()
        upload = StagedUpload(
            upload_id=upload_id,
            owner_key=owner_key,
            binding=binding,
            size=size_bytes,
            filename=filename,
            mime_type=mime_type,
            declared_sha256=sha256,
            charge=charge,
            staging=staging,
            last_used=now,
        )
        self._uploads[upload_id] = upload
        self._by_owner.setdefault(owner_key, {})[upload_id] = upload
        self._schedule_sweep(limits.upload_idle_secs)
        return BeginResult(upload_id)

    def chunk(self, owner_key: object, upload_id: str, offset: int, data_b64: str) -> int:
        """Apply one chunk; returns the bytes received so far. Synchronous: chunks of one upload never
        interleave, and a rejected chunk changes nothing."""
        upload = self._get(owner_key, upload_id)
        data = decode_b64(data_b64, field="data_b64", limit=CHUNK_BYTES, too_large="chunk_too_large")
        try:
            received, _appended = upload.accept(offset, data, chunk_bytes=CHUNK_BYTES)
        except OSError as exc:
            log.error("staging a chunk failed (errno %s)", exc.errno)
            raise StorageFailed from None
        return received

    async def commit(self, owner_key: object, upload_id: str, verify: Verify) -> AttachEntry:
        """Store a complete upload through the commit step; one commit at a time per upload, and a retried
        commit of an upload this connection already stored answers the same entry."""
        remembered = self._remembered(owner_key, upload_id)
        if remembered is not None:
            return remembered
        lock = self._committing.get(upload_id)
        if lock is None:
            self._get(owner_key, upload_id)  # -32004 for unknown / foreign / expired, before any lock exists
            lock = self._committing[upload_id] = asyncio.Lock()
        try:
            async with lock:
                return await self._commit_locked(owner_key, upload_id, verify)
        finally:
            if upload_id not in self._uploads and not lock.locked() and self._committing.get(upload_id) is lock:
                del self._committing[upload_id]

    async def _commit_locked(self, owner_key: object, upload_id: str, verify: Verify) -> AttachEntry:
        remembered = self._remembered(owner_key, upload_id)
        if remembered is not None:  # a concurrent retry that waited for the first commit
            return remembered
        upload = self._get(owner_key, upload_id)
        if not upload.complete:
            raise InvalidUpload(
                "commit before all declared bytes arrived",
                field="upload_id",
                type="incomplete",
                received_bytes=upload.received,
                size_bytes=upload.size,
            )
        digest = upload.digest()
        if upload.declared_sha256 is not None and upload.declared_sha256 != digest:
            self._discard(upload)
            raise InvalidUpload(
                "the bytes do not match the declared sha256; the upload was discarded",
                field="sha256",
                type="sha256_mismatch",
            )
        assert isinstance(upload.binding, SessionBinding)
        # The staged file itself is the source: the commit step copies it in the kernel, never into memory.
        payload = Payload(upload.size, digest, upload.filename, upload.mime_type, upload.staging)
        try:
            [entry] = await self.store.store(upload.binding, verify, [payload])
        except SessionChanged:
            self._discard(upload)  # bound to a session that no longer exists: it can never commit
            raise
        # Stored: from here to the return nothing awaits, so a closing connection cannot interleave.
        self._discard(upload)
        done = self._committed.setdefault(owner_key, OrderedDict())
        done[upload_id] = entry
        while len(done) > _REMEMBERED_COMMITS:
            done.popitem(last=False)
        return entry

    def _remembered(self, owner_key: object, upload_id: str) -> AttachEntry | None:
        done = self._committed.get(owner_key)
        return None if done is None else done.get(upload_id)

    def connection_closed(self, owner_key: object) -> None:
        """R-FILE-3: everything the connection staged is discarded (a close listener of the RPC server)."""
        for upload in list(self._by_owner.get(owner_key, {}).values()):
            self._discard(upload)
        self._by_owner.pop(owner_key, None)
        self._committed.pop(owner_key, None)

    def reclaim_idle(self) -> int:
        """Discard every upload idle beyond `upload_idle_secs`, on any connection; returns how many."""
        idle, now = self._limits().upload_idle_secs, self._clock()
        expired = [u for u in self._uploads.values() if now - u.last_used > idle and not self._in_commit(u)]
        for upload in expired:
            self._discard(upload)
        return len(expired)

    def staged(self, owner_key: object | None = None) -> int:
        """How many uploads are staged (by one connection, or in total)."""
        if owner_key is None:
            return len(self._uploads)
        return len(self._by_owner.get(owner_key, {}))

    def close(self) -> None:
        """Daemon shutdown: discard every staged upload."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for upload in list(self._uploads.values()):
            self._discard(upload)

    # -- session/prompt attachments ----------------------------------------------------------------

    async def prompt_with_attachments(
        self, principal: Principal, session_id: str, prompt: str, attachments: Sequence[object]
    ) -> str:
        """The prompt with each attachment's marker appended, one per line, after a blank line.

        Each attachment is a `file/attach` entry of this session's workspace (checked, so the list cannot carry
        arbitrary text); the session is looked up exactly as `session/prompt` does (ownership included).
        """
        if not attachments:
            return prompt
        if len(attachments) > MAX_ATTACHMENTS:
            raise InvalidUpload(
                f"at most {MAX_ATTACHMENTS} attachments", field="attachments", type="too_many", limit=MAX_ATTACHMENTS
            )
        live = await self._sessions.live_or_rehydrate(principal, session_id)
        uploads = uploads_dir_of(live.workspace)
        markers = [attachment_marker(uploads, entry, f"attachments.{i}") for i, entry in enumerate(attachments)]
        block = "\n".join(markers)
        return f"{prompt}\n\n{block}" if prompt else block

    # -- internals ---------------------------------------------------------------------------------

    async def _bind(self, principal: Principal, session_id: str) -> SessionBinding:
        """The live session (rehydrated like `session/prompt` would), its ownership and agent right."""
        live = await self._sessions.live_or_rehydrate(principal, session_id)  # -32000 / -32003
        if not principal.may_use_agent(live.agent_alias):
            raise AgentNotAllowed
        return SessionBinding.of(live)

    def _get(self, owner_key: object, upload_id: str) -> StagedUpload:
        upload = self._uploads.get(upload_id)
        if upload is None or upload.owner_key is not owner_key:
            raise UploadNotFound
        now = self._clock()
        if now - upload.last_used > self._limits().upload_idle_secs and not self._in_commit(upload):
            self._discard(upload)
            raise UploadNotFound("The upload expired")
        upload.last_used = now
        return upload

    def _in_commit(self, upload: StagedUpload) -> bool:
        lock = self._committing.get(upload.upload_id)
        return lock is not None and lock.locked()

    def _discard(self, upload: StagedUpload) -> None:
        if self._uploads.pop(upload.upload_id, None) is None:
            return
        mine = self._by_owner.get(upload.owner_key)
        if mine is not None:
            mine.pop(upload.upload_id, None)
            if not mine:
                del self._by_owner[upload.owner_key]
        lock = self._committing.get(upload.upload_id)
        if lock is not None and not lock.locked():
            del self._committing[upload.upload_id]
        upload.charge.release()
        try:
            upload.staging.close()
        except OSError:  # pragma: no cover - closing an anonymous temp file
            log.warning("closing a staged upload failed", exc_info=True)

    def _schedule_sweep(self, idle_secs: float) -> None:
        if self._sweeper is not None:
            return
        with contextlib.suppress(RuntimeError):  # no running loop (synchronous unit tests)
            loop = asyncio.get_running_loop()
            self._sweeper = loop.call_later(max(idle_secs / 4, 0.05), self._sweep)

    def _sweep(self) -> None:
        self._sweeper = None
        reclaimed = self.reclaim_idle()
        if reclaimed:
            log.info("discarded %d idle upload(s)", reclaimed)
        for lock_id in [k for k, lock in self._committing.items() if k not in self._uploads and not lock.locked()]:
            del self._committing[lock_id]
        if self._uploads:
            self._schedule_sweep(self._limits().upload_idle_secs)


def _decode_all(files: Sequence[IncomingFile]) -> list[Payload]:
    payloads: list[Payload] = []
    for i, f in enumerate(files):
        data = decode_b64(f.data_b64, field=f"files.{i}.data_b64", limit=MAX_BYTES, too_large="too_large")
        payloads.append(Payload.of_bytes(data, f.filename, f.mime_type))
    return payloads


def staging_dir_for(data_dir: Path) -> Path:
    """`<data_dir>/staging` (0700): where anonymous staging files are created."""
    path = data_dir / "staging"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    return path
