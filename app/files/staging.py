"""One staged chunked upload and its chunk rules (R-FILE-2), independent of sockets and sessions.

Chunk rules, in the order they are checked (every rejection leaves the upload exactly as it was):

* a chunk longer than `chunk_bytes` (decoded) → rejected (`chunk_too_large`);
* `offset` beyond the bytes received so far → rejected (`offset_gap`);
* `offset` inside the received bytes: when the chunk lies wholly inside them and its bytes equal the stored
  ones it is a retry after a lost response and is confirmed unchanged; different bytes (`chunk_conflict`) or a
  chunk that starts inside and runs past the received bytes (`offset_mismatch`) are rejected;
* `offset` = received: bytes beyond `size_bytes` → rejected (`beyond_size`); else appended.

The bytes go to a `Staging` backend: an anonymous temporary file (`FileStaging`, the daemon's choice: staged
bytes never sit in the daemon's memory, and nothing is left on disk after a crash) or a `bytearray`
(`MemoryStaging`, tests). Either way the payload was charged to the budget at `begin`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from app.files.budget import Charge
from app.files.errors import InvalidUpload

__all__ = ["FileStaging", "MemoryStaging", "StagedUpload", "Staging", "write_all"]

_BLOCK = 1 << 20

if sys.platform == "win32":  # no pread/pwrite: seek and read or write, one at a time
    _seek_lock = threading.Lock()

    def _pwrite(fd: int, data: memoryview, offset: int) -> int:
        with _seek_lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.write(fd, data)

    def _pread(fd: int, size: int, offset: int) -> bytes:
        with _seek_lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)

else:
    _pwrite, _pread = os.pwrite, os.pread


class Staging(Protocol):
    def write(self, offset: int, data: bytes) -> None: ...

    def read(self, offset: int, size: int) -> bytes: ...

    def copy_to(self, fd: int, size: int) -> None:
        """Write the first `size` staged bytes to the file descriptor `fd` (at its current position)."""
        ...

    def close(self) -> None: ...


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class MemoryStaging:
    def __init__(self) -> None:
        self._buffer = bytearray()

    def write(self, offset: int, data: bytes) -> None:
        assert offset == len(self._buffer)
        self._buffer += data

    def read(self, offset: int, size: int) -> bytes:
        return bytes(self._buffer[offset : offset + size])

    def copy_to(self, fd: int, size: int) -> None:
        write_all(fd, memoryview(self._buffer)[:size])

    def close(self) -> None:
        self._buffer = bytearray()


class FileStaging:
    """An unnamed temporary file (O_TMPFILE where the platform has it) in a private directory.

    Created on the first non-empty write, so an empty upload never opens a file.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._fd: int | None = None

    def _open(self) -> int:
        if self._fd is None:
            handle = tempfile.TemporaryFile(dir=self._directory, buffering=0)  # noqa: SIM115 - closed in close()
            self._fd = os.dup(handle.fileno())
            handle.close()
        return self._fd

    def write(self, offset: int, data: bytes) -> None:
        fd, view = self._open(), memoryview(data)
        while view:
            written = _pwrite(fd, view, offset)
            view, offset = view[written:], offset + written

    def read(self, offset: int, size: int) -> bytes:
        if self._fd is None or size == 0:
            return b""
        parts: list[bytes] = []
        while size > 0:
            part = _pread(self._fd, size, offset)
            if not part:
                raise OSError("the staged upload is shorter than what was received")
            parts.append(part)
            offset, size = offset + len(part), size - len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def copy_to(self, fd: int, size: int) -> None:
        """In the kernel (`copy_file_range`) where it can; else through a 1 MiB buffer. Never reads the
        staged bytes into one big buffer, so a commit costs no memory beyond the budget."""
        if size == 0:
            return
        if self._fd is None:
            raise OSError(errno.EBADF, "the staged upload was discarded")
        offset = 0
        if hasattr(os, "copy_file_range"):
            try:
                while offset < size:
                    copied = os.copy_file_range(self._fd, fd, size - offset, offset)
                    if copied == 0:
                        raise OSError(errno.EIO, "the staged upload is shorter than what was received")
                    offset += copied
                return
            except OSError as exc:
                if offset or exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise
        while offset < size:
            block = _pread(self._fd, min(_BLOCK, size - offset), offset)
            if not block:
                raise OSError(errno.EIO, "the staged upload is shorter than what was received")
            write_all(fd, block)
            offset += len(block)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


@dataclass(eq=False)
class StagedUpload:
    """What `begin` admitted: bound to its connection (`owner_key`) and session binding, charged to the budget."""

    upload_id: str
    owner_key: object  # the connection that began it; compared by identity
    binding: object  # app.files.service.SessionBinding (kept opaque here so this module stays pure)
    size: int
    filename: str | None
    mime_type: str | None
    declared_sha256: str | None
    charge: Charge
    staging: Staging
    last_used: float
    received: int = 0
    _hasher: hashlib._Hash = field(default_factory=hashlib.sha256, repr=False)

    @property
    def complete(self) -> bool:
        return self.received == self.size

    def digest(self) -> str:
        """SHA-256 (hex) of the bytes received so far."""
        return self._hasher.hexdigest()

    def accept(self, offset: int, data: bytes, *, chunk_bytes: int) -> tuple[int, bool]:
        """Apply one chunk; returns (received_bytes, appended). Raises InvalidUpload, changing nothing."""
        size, received = len(data), self.received
        if size > chunk_bytes:
            raise InvalidUpload(
                f"a chunk may carry at most {chunk_bytes} bytes",
                field="data_b64",
                type="chunk_too_large",
                limit=chunk_bytes,
            )
        if offset > received:
            raise InvalidUpload(
                "offset must equal the bytes received so far",
                field="offset",
                type="offset_gap",
                received_bytes=received,
            )
        if offset < received:
            if offset + size > received:
                raise InvalidUpload(
                    "a chunk must either repeat received bytes or start where they end",
                    field="offset",
                    type="offset_mismatch",
                    received_bytes=received,
                )
            if self.staging.read(offset, size) != data:
                raise InvalidUpload(
                    "different bytes at an already accepted offset",
                    field="data_b64",
                    type="chunk_conflict",
                    received_bytes=received,
                )
            return received, False  # a retry of an accepted chunk: confirmed, unchanged
        if received + size > self.size:
            raise InvalidUpload(
                "the chunk runs past size_bytes",
                field="data_b64",
                type="beyond_size",
                received_bytes=received,
                size_bytes=self.size,
            )
        if size:
            self.staging.write(offset, data)  # may raise OSError: then nothing below has changed either
            self._hasher.update(data)
            self.received = received + size
        return self.received, bool(size)

    def read_all(self) -> bytes:
        return self.staging.read(0, self.received)
