"""read_file / write_file (R-AGENT-3): inside the workspace only — `..`, absolute paths and symlinks that lead
out are refused — and reads are capped at the output limit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import Elicitation, ToolContext
from app.agents.tools import BUILTIN_TOOLS
from app.agents.tools.files import ReadFileTool, WriteFileTool

pytestmark = pytest.mark.req("R-AGENT-3")


class NoClient:
    async def elicit(self, message: str, requested_schema: dict[str, Any], *, timeout: float) -> Elicitation:
        return Elicitation(action="unavailable")


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("top secret")
    return ToolContext(session_id="s1", workspace=tmp_path / "ws", client=NoClient(), output_limit_bytes=1024)


async def read(ctx: ToolContext, path: str) -> str:
    return await ReadFileTool().run({"path": path}, ctx)


async def write(ctx: ToolContext, path: str, content: str) -> str:
    return await WriteFileTool().run({"path": path, "content": content}, ctx)


def test_specs_and_policy() -> None:
    # R-GUARD-1: writing asks by default, reading does not.
    assert BUILTIN_TOOLS["read_file"].needs_approval is False
    assert BUILTIN_TOOLS["write_file"].needs_approval is True
    for name in ("read_file", "write_file"):
        assert "path" in BUILTIN_TOOLS[name].spec.parameters["required"]


async def test_write_then_read(ctx: ToolContext) -> None:
    assert await write(ctx, "dir/sub/notes.txt", "héllo\n") == "Wrote 7 bytes to 'dir/sub/notes.txt'."
    assert (ctx.workspace / "dir/sub/notes.txt").read_text() == "héllo\n"
    assert await read(ctx, "dir/sub/notes.txt") == "héllo\n"
    assert await write(ctx, "dir/sub/notes.txt", "") == "Wrote 0 bytes to 'dir/sub/notes.txt'."
    assert await read(ctx, "dir/sub/notes.txt") == ""


async def test_absolute_path_inside_the_workspace_is_allowed(ctx: ToolContext) -> None:
    target = ctx.workspace / "a.txt"
    assert (await write(ctx, str(target), "x")).startswith("Wrote 1 bytes")
    assert await read(ctx, str(target)) == "x"


async def test_write_creates_a_missing_workspace(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s", workspace=tmp_path / "new" / "ws", client=NoClient())
    assert (await write(ctx, "a.txt", "x")).startswith("Wrote")
    assert (tmp_path / "new" / "ws" / "a.txt").read_text() == "x"


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "..", "../ws2/x"])
async def test_dotdot_escapes_are_refused(ctx: ToolContext, path: str) -> None:
    assert (await read(ctx, path)).startswith("Refused:")
    assert (await write(ctx, path, "pwned")).startswith("Refused:")
    assert (ctx.workspace.parent / "secret.txt").read_text() == "top secret"
    assert not (ctx.workspace.parent / "ws2").exists()


async def test_absolute_paths_outside_are_refused(ctx: ToolContext) -> None:
    outside = str(ctx.workspace.parent / "secret.txt")
    assert await read(ctx, outside) == f"Refused: {outside!r} is outside the workspace."
    assert (await write(ctx, outside, "pwned")).startswith("Refused:")
    assert (await read(ctx, "/etc/passwd")).startswith("Refused:")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
async def test_symlink_escapes_are_refused(ctx: ToolContext) -> None:
    secret = ctx.workspace.parent / "secret.txt"
    (ctx.workspace / "link.txt").symlink_to(secret)
    (ctx.workspace / "outdir").symlink_to(ctx.workspace.parent, target_is_directory=True)
    assert (await read(ctx, "link.txt")).startswith("Refused:")
    assert (await write(ctx, "link.txt", "pwned")).startswith("Refused:")
    assert (await read(ctx, "outdir/secret.txt")).startswith("Refused:")
    assert (await write(ctx, "outdir/new.txt", "pwned")).startswith("Refused:")
    assert secret.read_text() == "top secret"
    assert not (ctx.workspace.parent / "new.txt").exists()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
async def test_symlink_that_stays_inside_is_followed(ctx: ToolContext) -> None:
    (ctx.workspace / "real.txt").write_text("inside")
    (ctx.workspace / "alias.txt").symlink_to(ctx.workspace / "real.txt")
    assert await read(ctx, "alias.txt") == "inside"


async def test_symlink_loop_is_refused(ctx: ToolContext) -> None:
    (ctx.workspace / "a").symlink_to(ctx.workspace / "b")
    (ctx.workspace / "b").symlink_to(ctx.workspace / "a")
    assert (await read(ctx, "a")).startswith("Refused:")


async def test_read_is_capped_at_the_output_limit(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("z" * 5000)
    result = await read(ctx, "big.txt")
    assert len(result.encode()) <= 1024
    assert result.startswith("z" * 900)
    assert result.endswith("of 5000 bytes are shown]")


async def test_read_problems_are_sentences(ctx: ToolContext) -> None:
    (ctx.workspace / "dir").mkdir()
    assert await read(ctx, "missing.txt") == "No such file: 'missing.txt'."
    assert await read(ctx, "dir") == "Cannot read 'dir': it is a directory."
    assert await write(ctx, "dir", "x") == "Cannot write 'dir': it is a directory."
    assert await write(ctx, ".", "x") == "Cannot write '.': it is the workspace directory."


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_a_fifo_does_not_hang_the_tools(ctx: ToolContext) -> None:
    os.mkfifo(ctx.workspace / "pipe")
    assert await read(ctx, "pipe") == "Cannot read 'pipe': it is not a regular file."
    assert (await write(ctx, "pipe", "x")).startswith("Cannot write 'pipe'")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (ReadFileTool(), {}),
        (ReadFileTool(), {"path": ""}),
        (ReadFileTool(), {"path": 1}),
        (WriteFileTool(), {"path": "a"}),
        (WriteFileTool(), {"content": "x"}),
        (WriteFileTool(), {"_raw": "{oops"}),
    ],
)
async def test_bad_arguments_are_a_sentence(
    ctx: ToolContext, tool: ReadFileTool | WriteFileTool, arguments: dict[str, Any]
) -> None:
    assert (await tool.run(arguments, ctx)).startswith("Invalid arguments:")


async def test_nul_in_path_is_refused(ctx: ToolContext) -> None:
    assert (await read(ctx, "a\0b")).startswith("Refused:")
