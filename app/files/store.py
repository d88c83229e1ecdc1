"""The commit step shared by `file/attach` and `file/upload/commit` (R-FILE-1, 6, 7).

    async with live.lock:                      # the session lock: one store at a time per session
        ── one synchronous section: no await from here to the end ──
        the session is still the one the call was bound to (same live object, generation, owner, agent)
        verify()  → the caller's credential and `files:create`, re-resolved under the policy in force now
        ownership (non-admin must own it) and the agent right, for that principal
        compare with the file on disk, (re)write it if needed, index it

Why this holds the policy fixed (R-FILE-6): a config commit installs its new policy, and a pairing revocation
marks its token revoked, each in a synchronous step on the event loop (`ConfigStore._commit` after its awaits;
`PairedTokens.revoke` after the database write). The section above never yields to the loop, so such a step
runs either wholly before the verification (the call is then refused and nothing is written) or wholly after
the file is stored and indexed — never in between. No lock is shared with the config or pairing code.
The price is that the file write itself runs on the event loop: at most 10 MB, copied in the kernel from the
staging file (`copy_file_range`) or written from memory for `file/attach`, plus hashing an existing copy for
the R-FILE-7 comparison (docs/files.md has the measured cost, ~5 ms for 10 MB). Base64 decoding and hashing of
the new bytes happen before the section.

The dedup index lives in memory, one per live-session generation (a `WeakKeyDictionary` keyed by the
`LiveSession`): a closed and recreated (or rehydrated) session starts with an empty index, so its first upload
of a file answers `deduplicated:false` (the file on disk is reused when it is still intact). The workspace
itself stays the source of truth.

Writes never follow a link: `<workspace>/uploads` is opened with O_NOFOLLOW (a symlink there is replaced by a
real directory), the stored file is compared through an O_NOFOLLOW|O_NONBLOCK descriptor, and (re)written as
a new temporary file in the same directory that `os.replace` moves over the name (replacing a link or an
edited file, never writing into it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from weakref import WeakKeyDictionary

from app.auth.policy import Principal
from app.files.errors import StorageFailed
from app.files.naming import UPLOADS_DIR, marker, mime_for, stored_name
from app.files.staging import write_all
from app.sessions.errors import AgentNotAllowed, SessionChanged, SessionNotOwned
from app.sessions.live.session import LiveSession

__all__ = [
    "AttachEntry",
    "BytesSource",
    "FileStore",
    "Payload",
    "SessionBinding",
    "Source",
    "UploadsDir",
    "Verify",
    "uploads_dir_of",
]

log = logging.getLogger("zeroclaw.files")

# Returns the caller's principal as of now, or raises (a revoked credential, a removed grant).
Verify = Callable[[], Principal]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FD = (
    sys.platform != "win32" and os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd and bool(_O_NOFOLLOW)
)
_COMPARE_BLOCK = 1 << 20

if sys.platform == "win32":  # no readv

    def _readinto(fd: int, buffer: bytearray) -> int:
        data = os.read(fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)

else:

    def _readinto(fd: int, buffer: bytearray) -> int:
        return os.readv(fd, [buffer])


def uploads_dir_of(workspace: Path | str) -> str:
    """The absolute `<workspace>/uploads` path as it appears in entries and markers (links not resolved)."""
    return os.path.join(os.path.abspath(workspace), UPLOADS_DIR)


@dataclass(frozen=True, slots=True)
class SessionBinding:
    """The exact live session an operation began for (R-FILE-6)."""

    session: LiveSession
    session_id: str
    generation: int
    owner: str
    agent_alias: str

    @classmethod
    def of(cls, live: LiveSession) -> SessionBinding:
        return cls(live, live.session_id, live.generation, live.owner, live.agent_alias)

    def still_current(self, live_sessions: Mapping[str, LiveSession]) -> bool:
        live = live_sessions.get(self.session_id)
        return (
            live is self.session
            and live.generation == self.generation
            and live.owner == self.owner
            and live.agent_alias == self.agent_alias
        )


class Source(Protocol):
    """Where a payload's bytes come from: a staged upload, or `BytesSource` for `file/attach`."""

    def copy_to(self, fd: int, size: int) -> None: ...


class BytesSource:
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def copy_to(self, fd: int, size: int) -> None:
        write_all(fd, memoryview(self.data)[:size])


@dataclass(frozen=True, slots=True)
class Payload:
    """One file ready to store: its size, SHA-256 (computed before the commit step) and where its bytes are."""

    size: int
    sha256: str
    filename: str | None
    mime_type: str | None
    source: Source

    @classmethod
    def of_bytes(cls, data: bytes, filename: str | None = None, mime_type: str | None = None) -> Payload:
        return cls(len(data), hashlib.sha256(data).hexdigest(), filename, mime_type, BytesSource(data))


@dataclass(frozen=True, slots=True)
class AttachEntry:
    ref_id: str
    marker: str
    workspace_path: str
    size_bytes: int
    deduplicated: bool


class FileStore:
    def __init__(self, live_sessions: Callable[[], Mapping[str, LiveSession]]) -> None:
        self._live_sessions = live_sessions
        # stored name → size, per live-session generation; an entry appears only after its file is on disk
        self._index: WeakKeyDictionary[LiveSession, dict[str, int]] = WeakKeyDictionary()

    def indexed(self, live: LiveSession) -> Mapping[str, int]:
        return self._index.get(live, {})

    async def store(self, binding: SessionBinding, verify: Verify, payloads: Sequence[Payload]) -> list[AttachEntry]:
        """The commit step. Raises SessionChanged, whatever `verify` raises, SessionNotOwned, AgentNotAllowed
        (all before anything is written), or StorageFailed."""
        live = binding.session
        async with live.lock:
            # -- synchronous from here on: see the module docstring before adding an await ---------
            if not binding.still_current(self._live_sessions()):
                raise SessionChanged
            principal = verify()
            if not principal.admin and principal.id != live.owner:
                raise SessionNotOwned
            if not principal.may_use_agent(live.agent_alias):
                raise AgentNotAllowed
            index = self._index.setdefault(live, {})
            uploads = uploads_dir_of(live.workspace)
            entries: list[AttachEntry] = []
            try:
                with UploadsDir(live.workspace) as directory:
                    for payload in payloads:
                        entries.append(_store_one(directory, uploads, index, payload))
            except OSError as exc:
                log.error("storing an upload failed (errno %s)", exc.errno)
                raise StorageFailed from None
            return entries


def _store_one(directory: UploadsDir, uploads: str, index: dict[str, int], payload: Payload) -> AttachEntry:
    name = stored_name(payload.sha256, payload.filename)
    deduplicated = name in index
    # R-FILE-7: write unless an intact copy is there (indexed, or left by a session of the same agent).
    if not directory.holds(name, payload.size, payload.sha256):
        directory.write(name, payload)
    index[name] = payload.size
    path = os.path.join(uploads, name)
    return AttachEntry(
        ref_id=f"sha256:{payload.sha256}",
        marker=marker(path, payload.filename or name, mime_for(payload.filename, payload.mime_type)),
        workspace_path=path,
        size_bytes=payload.size,
        deduplicated=deduplicated,
    )


# Marks this process's temporary files; another's are removed on first use (docs/files.md, "Write").
_PROCESS_MARK = secrets.token_hex(4)
_TEMP_RE = re.compile(r"\A\..+\.([0-9a-f]{8})[0-9a-f]{12}\.tmp\Z")
_SWEPT: set[str] = set()  # uploads directories already cleared of other processes' temporary files


class UploadsDir:
    """`<workspace>/uploads`, opened so that no operation below it follows a symbolic link. A workspace's uploads
    belong to one daemon at a time (docs/files.md)."""

    def __init__(self, workspace: Path | str) -> None:
        self._workspace = os.path.abspath(workspace)
        self._path = os.path.join(self._workspace, UPLOADS_DIR)
        self._fd: int | None = None

    def __enter__(self) -> UploadsDir:
        if _DIR_FD:
            self._fd = self._open_dir_fd()
        else:  # pragma: no cover - platforms without *at() calls (Windows)
            if os.path.islink(self._path):
                os.unlink(self._path)
            os.makedirs(self._path, mode=0o700, exist_ok=True)
        if self._path not in _SWEPT:
            self._remove_stale_temporaries()
            _SWEPT.add(self._path)
        return self

    def _remove_stale_temporaries(self) -> None:
        """Unlink what another process began writing here and never renamed (it was killed): partial bytes that
        no stored entry points to."""
        target: int | str = self._fd if self._fd is not None else self._path
        with contextlib.suppress(OSError):
            for name in os.listdir(target):
                found = _TEMP_RE.match(name)
                if found is not None and found.group(1) != _PROCESS_MARK:
                    with contextlib.suppress(OSError):
                        if self._fd is not None:
                            os.unlink(name, dir_fd=self._fd)
                        else:  # pragma: no cover - Windows
                            os.unlink(os.path.join(self._path, name))
                    log.info("removed a partial upload left by an earlier daemon")

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _open_dir_fd(self) -> int:
        workspace_fd = os.open(self._workspace, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            for _attempt in range(3):
                try:
                    return os.open(
                        UPLOADS_DIR, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=workspace_fd
                    )
                except FileNotFoundError:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(UPLOADS_DIR, 0o700, dir_fd=workspace_fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    info = os.stat(UPLOADS_DIR, dir_fd=workspace_fd, follow_symlinks=False)
                    if not stat.S_ISLNK(info.st_mode):
                        raise  # a regular file named `uploads`: not ours to remove
                    os.unlink(UPLOADS_DIR, dir_fd=workspace_fd)  # removes the link itself, never its target
            raise OSError(errno.EAGAIN, "the uploads directory keeps changing")
        finally:
            os.close(workspace_fd)

    def holds(self, name: str, size: int, sha256: str) -> bool:
        """Whether `name` is a regular file (not a link, FIFO or directory) of `size` bytes hashing to `sha256`."""
        try:
            if self._fd is not None:
                fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=self._fd)
            else:  # pragma: no cover - Windows
                path = os.path.join(self._path, name)
                if os.path.islink(path):
                    return False
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError:  # missing, a link (ELOOP), unreadable: (re)write it
            return False
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size != size:
                return False
            digest, buffer = hashlib.sha256(), bytearray(_COMPARE_BLOCK)
            view, total = memoryview(buffer), 0
            while count := _readinto(fd, buffer):
                digest.update(view[:count])
                total += count
                if total > size:
                    return False
            return total == size and digest.hexdigest() == sha256
        finally:
            os.close(fd)

    def write(self, name: str, payload: Payload) -> None:
        """Write the payload to a new temporary file beside `name`, then `os.replace` it over `name`."""
        temp = f".{name}.{_PROCESS_MARK}{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
        if self._fd is not None:
            fd = os.open(temp, flags, 0o600, dir_fd=self._fd)
        else:  # pragma: no cover - Windows
            fd = os.open(os.path.join(self._path, temp), flags, 0o600)
        try:
            try:
                payload.source.copy_to(fd, payload.size)
            finally:
                os.close(fd)
            if self._fd is not None:
                os.replace(temp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
            else:  # pragma: no cover - Windows
                os.replace(os.path.join(self._path, temp), os.path.join(self._path, name))
        except BaseException:
            with contextlib.suppress(OSError):
                if self._fd is not None:
                    os.unlink(temp, dir_fd=self._fd)
                else:  # pragma: no cover - Windows
                    os.unlink(os.path.join(self._path, temp))
            raise
