"""The bash tool (R-AGENT-3): workspace, merged output, exit code, 64 KiB cap, timeout and cancellation that kill
the whole process group."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from waiting import until

from app.agents.base import Elicitation, ToolContext
from app.agents.tools import BUILTIN_TOOLS
from app.agents.tools.bash import BashTool

pytestmark = [pytest.mark.req("R-AGENT-3"), pytest.mark.skipif(os.name != "posix", reason="POSIX shell")]


class NoClient:
    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        return Elicitation(action="unavailable")


def context(tmp_path: Path, **kwargs: Any) -> ToolContext:
    return ToolContext(session_id="s1", workspace=tmp_path / "ws", client=NoClient(), **kwargs)


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, not yet reaped by its new parent) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): fall back to signal 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


async def wait_gone(pid: int, within: float = 2.0) -> bool:
    return await until(lambda: not alive(pid), within, interval=0.02, what=f"process {pid} to be gone")


async def wait_for_file(path: Path, within: float = 5.0) -> str:
    """The text of `path` once it appears with some."""
    return await until(lambda: path.exists() and path.read_text().strip(), within, interval=0.02, what=f"{path}")


async def test_spec_and_policy() -> None:
    tool = BUILTIN_TOOLS["bash"]
    assert tool.needs_approval is True  # R-STREAM-3: bash asks for approval by default
    assert tool.spec.name == "bash" and tool.spec.parameters["required"] == ["command"]


async def test_runs_in_the_workspace_it_creates_with_merged_output_and_exit_code(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    assert not ctx.workspace.exists()
    result = await BashTool().run({"command": "pwd; echo out; echo err >&2; exit 3"}, ctx)
    assert result == f"{ctx.workspace.resolve()}\nout\nerr\n[exit code 3]"


async def test_success_and_no_output(tmp_path: Path) -> None:
    assert await BashTool().run({"command": "true"}, context(tmp_path)) == "[exit code 0]"
    assert await BashTool().run({"command": "printf x"}, context(tmp_path)) == "x\n[exit code 0]"


async def test_output_is_capped_at_64_kib(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    assert ctx.output_limit_bytes == 65_536
    result = await BashTool().run({"command": "head -c 300000 /dev/zero | tr '\\0' a; exit 2"}, ctx)
    assert len(result.encode()) <= 65_536
    assert result.startswith("a" * 60_000)
    assert "[output truncated: the first " in result and "of 300000 bytes are shown]" in result
    assert result.endswith("[exit code 2]")


async def test_cap_does_not_split_a_utf8_character(tmp_path: Path) -> None:
    ctx = context(tmp_path, output_limit_bytes=1024)
    result = await BashTool().run({"command": "for i in $(seq 1 600); do printf 'é'; done"}, ctx)
    assert len(result.encode()) <= 1024 and "\ufffd" not in result


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    ctx = context(tmp_path, bash_timeout_secs=0.5)
    started = time.monotonic()
    # A grandchild in the background, and the shell itself waiting: both must die.
    result = await BashTool().run({"command": "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; wait"}, ctx)
    assert time.monotonic() - started < 3
    assert "timed out after 0.5 s" in result
    for name in ("bg.pid", "sh.pid"):
        assert await wait_gone(int((ctx.workspace / name).read_text())), f"{name} survived the timeout"


async def test_background_job_holding_the_pipe_does_not_stall_the_call(tmp_path: Path) -> None:
    ctx = context(tmp_path, bash_timeout_secs=10)
    started = time.monotonic()
    result = await BashTool().run({"command": "sleep 30 & echo $! > bg.pid; echo started"}, ctx)
    assert time.monotonic() - started < 3
    assert result == "started\n[exit code 0]"
    assert await wait_gone(int((ctx.workspace / "bg.pid").read_text()))  # no leftovers after the call


async def test_cancellation_kills_the_subprocess(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    task = asyncio.create_task(BashTool().run({"command": "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; wait"}, ctx))
    shell = int(await wait_for_file(ctx.workspace / "sh.pid"))
    background = int(await wait_for_file(ctx.workspace / "bg.pid"))
    assert alive(shell) and alive(background)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(shell)  # killed and reaped before CancelledError reached us
    assert await wait_gone(background)


@pytest.mark.parametrize("arguments", [{}, {"command": ""}, {"command": "   "}, {"command": 3}, {"_raw": "{bad"}])
async def test_bad_arguments_are_a_sentence(tmp_path: Path, arguments: dict[str, Any]) -> None:
    result = await BashTool().run(arguments, context(tmp_path))
    assert result.startswith("Invalid arguments:")
    if "_raw" in arguments:
        assert "not a JSON object" in result
