"""`bash`: run a shell command in the session workspace (R-AGENT-3). Needs approval by default (R-STREAM-3).

The command runs in its own session (`start_new_session=True`), so its process group is everything it started:
that group is SIGKILLed on timeout, on cancellation, and after the shell exits (leftover background jobs would
otherwise outlive the call and hold the output pipe open).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from typing import Any

from app.agents.base import ToolContext, ToolSpec
from app.agents.sandbox.host import release
from app.agents.tools._common import fit_output, invalid, string_argument

__all__ = ["BashTool"]

SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
# How long a background job may hold the pipe once the shell exited; also the EOF wait after a kill.
_DRAIN_GRACE_SECS = 0.5
_READ_SIZE = 65_536
# Polls `returncode`: Process.wait() would also wait for the pipes (docs/agents.md, `bash`).
_POLL_SECS = 0.02


class _Output:
    """Keeps the first `limit` bytes and counts the rest, so a chatty command cannot grow memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    async def collect(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_SIZE):
            self.total += len(chunk)
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]


async def _wait(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Until the output ends and the shell exits, or the shell exits and the pipe stays open a grace period."""
    while not reader.done() and proc.returncode is None:
        await asyncio.wait({reader}, timeout=_POLL_SECS)
    if reader.done():
        await proc.wait()  # EOF came first (the usual case): the exit follows at once, or the timeout ends it
    else:
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE_SECS)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":  # no process groups: TerminateProcess on the shell itself
            os.kill(pgid, signal.SIGTERM)
        else:
            os.killpg(pgid, signal.SIGKILL)


async def _finish(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Kill the group, stop reading and reap the shell. Runs on every exit path, cancellation included."""
    _kill_group(proc.pid)  # synchronous: done even if this coroutine is cancelled again below
    if not reader.done():
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE_SECS)
    if reader.done():
        await proc.wait()
        return
    # Something left the group (its own setsid) and holds the pipe: proc.wait() would wait for it.
    reader.cancel()
    await asyncio.wait({reader})
    for _ in range(int(_DRAIN_GRACE_SECS / _POLL_SECS)):
        if proc.returncode is not None:
            break
        await asyncio.sleep(_POLL_SECS)


# Names a sandboxed command does not inherit from the daemon: credentials (a provider's `api_key_env`, cloud keys)
# and the daemon's own settings. As Codex's default shell environment policy excludes *KEY*, *SECRET*, *TOKEN*.
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|^ZEROCLAW_", re.IGNORECASE)


def _environment(context: ToolContext) -> dict[str, str] | None:
    """The command's environment: the daemon's plus the session's variables; sandboxed, without secret-looking
    names (the session's own variables are kept: the client chose to pass them)."""
    sandboxed = context.sandbox is not None and context.sandbox.enabled
    if not sandboxed and not context.env:
        return None
    base = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)} if sandboxed else dict(os.environ)
    return {**base, **(context.env or {})}


def _exit_note(code: int | None) -> str:
    if code is not None and code < 0:
        return f"[exit code {code}: killed by signal {-code}]"
    return f"[exit code {code}]"


class BashTool:
    spec = ToolSpec(
        name="bash",
        description=(
            "Run a shell command in the session workspace (bash, or sh where bash is missing). stdout and "
            "stderr are merged; the result is the output (capped) followed by the exit code. Commands that "
            "run longer than the timeout are killed together with everything they started."
        ),
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The shell command line to run."}},
            "required": ["command"],
        },
    )
    needs_approval = True

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> str:
        command = string_argument(arguments, "command")
        if command is None:
            return invalid(arguments, "a non-empty string `command`")
        if sys.platform == "win32":
            return "The bash tool is not available on Windows."
        sandbox = context.sandbox
        if sandbox is not None and sandbox.problem is not None:
            return f'Not run: [tools.bash] sandbox = "bwrap" is required and {sandbox.problem}.'
        try:
            context.workspace.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"Could not create the workspace: {exc.strerror or exc}."
        argv, cgroup = [SHELL, "-c", command], None
        if sandbox is not None and sandbox.enabled:
            try:
                argv, cgroup = sandbox.launch(argv, context.workspace.resolve())
            except OSError as exc:
                return f"Could not set up the sandbox: {exc.strerror or exc}."
        try:
            return await self._run(argv, command, context)
        finally:
            release(cgroup)

    async def _run(self, argv: list[str], command: str, context: ToolContext) -> str:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=context.workspace,
                env=_environment(context),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except ValueError:  # a NUL byte or a lone surrogate cannot be passed to exec
            return "Invalid arguments: `command` contains a NUL character or is not valid Unicode text."
        except OSError as exc:
            return f"Could not start {SHELL}: {exc.strerror or exc}."
        assert proc.stdout is not None  # stdout=PIPE
        output = _Output(context.output_limit_bytes)
        reader = asyncio.create_task(output.collect(proc.stdout))
        timed_out = False
        try:
            async with asyncio.timeout(context.bash_timeout_secs):
                await _wait(proc, reader)
        except TimeoutError:
            timed_out = True
        finally:
            await _finish(proc, reader)
        if timed_out:
            footer = (
                f"[timed out after {context.bash_timeout_secs:g} s: the command and everything it started were killed]"
            )
        else:
            footer = _exit_note(proc.returncode)
        return fit_output(bytes(output.data), output.total, context.output_limit_bytes, footer)
