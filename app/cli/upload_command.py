"""`zeroclaw upload SESSION FILE`: a chunked upload (R-FILE-2) with a progress bar, resumable after a lost
response, that prints the resulting `file/attach` entry as JSON on stdout.

Resuming: each chunk waits `CHUNK_TIMEOUT` seconds for its answer. When none comes (a lost or late response)
the same offset is sent again: the daemon confirms an already accepted chunk unchanged, or accepts it now. A
daemon that reports a different `received_bytes` (`offset_gap` / `offset_mismatch`) moves the client to that
offset. A timed-out commit is retried too: the daemon answers a retried commit of a stored upload with the
same entry. The file's SHA-256 is declared at `begin`, so a file that changes during the upload is refused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from app.files.naming import MAX_BYTES
from rpc.client import RemoteError

__all__ = ["CHUNK_TIMEOUT", "MAX_ATTEMPTS", "Caller", "UploadAborted", "send_file", "upload"]

CHUNK_TIMEOUT = 30.0
MAX_ATTEMPTS = 5  # per chunk (and for the commit): the first try plus four resends
_RESYNC = frozenset({"offset_gap", "offset_mismatch"})

# call(method, params) -> result; raises RemoteError for an error answer.
Caller = Callable[[str, dict[str, Any]], Awaitable[Any]]


class UploadAborted(Exception):
    """No answer after MAX_ATTEMPTS tries, or the file changed under the upload."""


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


async def _retrying(call: Caller, method: str, params: dict[str, Any], timeout: float) -> Any:
    for _attempt in range(MAX_ATTEMPTS):
        try:
            return await asyncio.wait_for(call(method, params), timeout)
        except TimeoutError:
            continue  # the answer was lost or is late: send the very same request again
    raise UploadAborted(f"no answer to {method} after {MAX_ATTEMPTS} attempts")


async def send_file(
    call: Caller,
    session_id: str,
    path: Path,
    *,
    on_progress: Callable[[int, int], None] = lambda _done, _total: None,
    timeout: float = CHUNK_TIMEOUT,
) -> dict[str, Any]:
    """Upload `path` to `session_id` through `call`; returns the `file/upload/commit` entry."""
    size = (await asyncio.to_thread(path.stat)).st_size
    sha256 = await asyncio.to_thread(_sha256_of, path)
    begun = await call(
        "file/upload/begin", {"session_id": session_id, "size_bytes": size, "filename": path.name, "sha256": sha256}
    )
    upload_id, chunk_bytes = begun["upload_id"], int(begun["chunk_bytes"])
    offset = 0
    on_progress(0, size)
    with path.open("rb") as f:
        while offset < size:
            f.seek(offset)
            data = f.read(min(chunk_bytes, size - offset))
            if not data:
                raise UploadAborted("the file became shorter during the upload")
            params = {"upload_id": upload_id, "offset": offset, "data_b64": _b64(data)}
            try:
                result = await _retrying(call, "file/upload/chunk", params, timeout)
            except RemoteError as exc:
                moved = _resync_offset(exc.error)
                if moved is None:
                    raise
                offset = moved
            else:
                offset = int(result["received_bytes"])
            on_progress(offset, size)
    entry: dict[str, Any] = await _retrying(call, "file/upload/commit", {"upload_id": upload_id}, timeout)
    return entry


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _resync_offset(error: dict[str, Any]) -> int | None:
    """The daemon's `received_bytes` when it says this chunk's offset is not where the upload stands."""
    data = error.get("data") or {}
    kinds = {e.get("type") for e in data.get("errors", []) if isinstance(e, dict)}
    received = data.get("received_bytes")
    if error.get("code") == -32602 and kinds & _RESYNC and isinstance(received, int):
        return received
    return None


def _file_problem(path: Path) -> str | None:
    """Why `path` cannot be uploaded, from one `stat` (the size limit is known before a byte is read), or None."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "does not exist; check the path"
    except PermissionError:
        return "permission denied (cannot look at the file)"
    except OSError as exc:
        return exc.strerror or "cannot be read"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory; upload one regular file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file; upload one regular file"
    if st.st_size > MAX_BYTES:
        return f"is {st.st_size} bytes; the limit is {MAX_BYTES} bytes (10 MB) per file"
    if not os.access(path, os.R_OK):
        return "permission denied (not readable)"
    return None


async def upload(config_dir: str | None, session_id: str, file: str, *, timeout: float = CHUNK_TIMEOUT) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from app.cli.hints import error_line
    from app.cli.rpc_command import connect
    from app.cli.terminal import write_out

    path = Path(file)
    problem = _file_problem(path)
    if problem is not None:
        print(f"zeroclaw: {file}: {problem}", file=sys.stderr)
        return 2
    client = await connect(config_dir)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    bar: list[TaskID] = []  # the bar's task, made by the first progress report

    def show(done: int, total: int) -> None:
        # First report: `begin` accepted the upload, so an unknown session is refused before any bar.
        if not bar:
            progress.start()
            bar.append(progress.add_task(path.name, total=total))
        progress.update(bar[0], completed=done, total=total)

    try:
        await client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "zeroclaw-upload"}})
        try:
            entry = await send_file(client.call, session_id, path, on_progress=show, timeout=timeout)
        finally:
            if bar:
                progress.stop()
        write_out(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    except RemoteError as exc:
        write_out(orjson.dumps({"error": exc.error}, option=orjson.OPT_INDENT_2).decode() + "\n")
        print(error_line(exc.error, config_dir), file=sys.stderr)
        return 1
    except (UploadAborted, ConnectionError, OSError) as exc:
        print(f"zeroclaw: upload failed: {exc}", file=sys.stderr)
        return 1
    finally:
        await client.close()
