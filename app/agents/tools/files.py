"""`read_file` and `write_file`: text files inside the session workspace only (R-AGENT-3).

Confinement is checked on the fully resolved path (`..`, absolute paths and symlinks all resolve before the
comparison), and the final component is opened with O_NOFOLLOW so a symlink swapped in after the check is not
followed. O_NONBLOCK keeps a FIFO planted in the workspace from hanging the call.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

from app.agents.base import ToolContext, ToolSpec
from app.agents.tools._common import PathRefused, fit_output, invalid, resolve_in_workspace, string_argument

__all__ = ["ReadFileTool", "WriteFileTool"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

_PATH_SCHEMA = {"type": "string", "description": "A path relative to the workspace (or absolute inside it)."}


def _os_error(verb: str, raw: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"No such file: {raw!r}."
    if isinstance(exc, IsADirectoryError):
        return f"Cannot {verb} {raw!r}: it is a directory."
    if isinstance(exc, PermissionError):
        return f"Cannot {verb} {raw!r}: permission denied."
    return f"Cannot {verb} {raw!r}: {exc.strerror or type(exc).__name__}."


def _read(workspace: Path, raw: str, limit: int) -> str:
    try:
        target = resolve_in_workspace(workspace, raw)
        fd = os.open(target, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except PathRefused as exc:
        return str(exc)
    except OSError as exc:
        return _os_error("read", raw, exc)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        return f"Cannot read {raw!r}: it is {kind}."
    try:
        with os.fdopen(fd, "rb") as file:
            data = file.read(limit)
            size = os.fstat(fd).st_size
    except OSError as exc:
        return _os_error("read", raw, exc)
    return fit_output(data, max(size, len(data)), limit)


def _write(workspace: Path, raw: str, content: str) -> str:
    try:
        data = content.encode()
    except UnicodeEncodeError:  # a lone surrogate, which JSON allows ("\ud800")
        return "Invalid arguments: `content` is not valid Unicode text."
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        target = resolve_in_workspace(workspace, raw)
        if target == workspace.resolve():
            return f"Cannot write {raw!r}: it is the workspace directory."
        target.parent.mkdir(parents=True, exist_ok=True)
        # Re-check after mkdir: the parent chain must still resolve inside the workspace.
        parent = resolve_in_workspace(workspace, str(target.parent))
        fd = os.open(
            parent / target.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644
        )
    except PathRefused as exc:
        return str(exc)
    except OSError as exc:
        return _os_error("write", raw, exc)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return f"Cannot write {raw!r}: it is not a regular file."
    try:
        with os.fdopen(fd, "wb") as file:  # closing flushes, so a full disk is reported here too
            file.write(data)
    except OSError as exc:
        return _os_error("write", raw, exc)
    return f"Wrote {len(data)} bytes to {raw!r}."


class ReadFileTool:
    spec = ToolSpec(
        name="read_file",
        description="Read a text file inside the session workspace. Long files are cut at the output limit.",
        parameters={"type": "object", "properties": {"path": _PATH_SCHEMA}, "required": ["path"]},
    )
    needs_approval = False

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = string_argument(arguments, "path")
        if path is None:
            return invalid(arguments, "a non-empty string `path`")
        # A thread, so a slow disk does not stall the event loop; the read is bounded by the output limit.
        return await asyncio.to_thread(_read, context.workspace, path, context.output_limit_bytes)


class WriteFileTool:
    spec = ToolSpec(
        name="write_file",
        description=(
            "Create or overwrite a text file inside the session workspace (missing parent directories are created)."
        ),
        parameters={
            "type": "object",
            "properties": {"path": _PATH_SCHEMA, "content": {"type": "string", "description": "The whole file."}},
            "required": ["path", "content"],
        },
    )
    needs_approval = True  # asks unless a rule allows it (R-GUARD-1)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = string_argument(arguments, "path")
        content = string_argument(arguments, "content", allow_empty=True)
        if path is None or content is None:
            return invalid(arguments, "a non-empty string `path` and a string `content`")
        return await asyncio.to_thread(_write, context.workspace, path, content)
