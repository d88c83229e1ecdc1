"""`zeroclaw upload`'s client loop against an in-process FileService whose answers can get lost (R-FILE-2)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any, cast

import pytest

from app.auth.policy import Principal
from app.cli import upload_command
from app.cli.upload_command import UploadAborted, send_file
from app.config.schema import Limits
from app.files.errors import FileError
from app.files.service import FileService
from app.sessions.live.session import LiveSession
from app.sessions.registry import SessionRegistry
from rpc.client import RemoteError
from rpc.core.wire import to_wire

OWNER = Principal(id="owner", admin=True)


class Sessions:
    def __init__(self, workspace: Path) -> None:
        workspace.mkdir()
        self.live = {"s1": LiveSession("s1", "owner", "default", "acp", workspace, "rpc")}

    async def live_or_rehydrate(self, principal: Principal, session_id: str) -> LiveSession:
        return self.live[session_id]


class LossyDaemon:
    """Runs each call for real, then 'loses' the answers whose call numbers are in `lose` (never returns)."""

    def __init__(self, tmp_path: Path, lose: set[int]) -> None:
        self.service = FileService(cast(SessionRegistry, Sessions(tmp_path / "ws")), Limits)
        self.conn = object()
        self.lose = lose
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append((method, params))
        try:
            result = await self._dispatch(method, params)
        except FileError as exc:
            data = {"errors": [{"type": getattr(exc, "type", "")}], **getattr(exc, "data", {})}
            raise RemoteError({"code": -32602, "message": exc.message, "data": data}) from None
        if len(self.calls) in self.lose:
            await asyncio.sleep(3600)  # the answer never arrives
        return result

    async def _dispatch(self, method: str, p: dict[str, Any]) -> Any:
        s = self.service
        if method == "file/upload/begin":
            r = await s.begin(
                self.conn,
                OWNER,
                p["session_id"],
                size_bytes=p["size_bytes"],
                filename=p["filename"],
                sha256=p["sha256"],
            )
            return to_wire(r, snake=True)
        if method == "file/upload/chunk":
            return {
                "upload_id": p["upload_id"],
                "received_bytes": s.chunk(self.conn, p["upload_id"], p["offset"], p["data_b64"]),
            }
        assert method == "file/upload/commit"
        return to_wire(await s.commit(self.conn, p["upload_id"], lambda: OWNER), snake=True)


def make_file(tmp_path: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    path = tmp_path / "payload.dat"
    path.write_bytes(data)
    return path, data


@pytest.mark.req("R-FILE-2")
async def test_resends_the_same_offset_after_a_lost_answer(tmp_path: Path) -> None:
    path, data = make_file(tmp_path, 2_500_000)
    daemon = LossyDaemon(tmp_path, lose={2, 3, 5})  # call 2 and 3: the first chunk twice; call 5: the second
    progress: list[int] = []
    entry = await send_file(daemon.call, "s1", path, timeout=0.2, on_progress=lambda done, _t: progress.append(done))
    chunks = [p["offset"] for m, p in daemon.calls if m == "file/upload/chunk"]
    assert chunks == [0, 0, 0, 1_048_576, 1_048_576, 2_097_152]
    assert Path(entry["workspace_path"]).read_bytes() == data
    assert entry["ref_id"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert progress[-1] == len(data)


@pytest.mark.req("R-FILE-2")
async def test_a_lost_commit_answer_is_retried_and_answers_the_same_entry(tmp_path: Path) -> None:
    path, data = make_file(tmp_path, 10)
    daemon = LossyDaemon(tmp_path, lose={3})  # begin, chunk, commit (lost), commit
    entry = await send_file(daemon.call, "s1", path, timeout=0.2)
    assert [m for m, _ in daemon.calls].count("file/upload/commit") == 2
    assert Path(entry["workspace_path"]).read_bytes() == data


async def test_empty_file(tmp_path: Path) -> None:
    path, _ = make_file(tmp_path, 0)
    daemon = LossyDaemon(tmp_path, lose=set())
    entry = await send_file(daemon.call, "s1", path, timeout=1)
    assert entry["size_bytes"] == 0 and [m for m, _ in daemon.calls] == ["file/upload/begin", "file/upload/commit"]


async def test_gives_up_after_max_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload_command, "MAX_ATTEMPTS", 2)
    path, _ = make_file(tmp_path, 10)
    daemon = LossyDaemon(tmp_path, lose={2, 3})
    with pytest.raises(UploadAborted):
        await send_file(daemon.call, "s1", path, timeout=0.1)


def test_resync_offset_reads_received_bytes() -> None:
    gap = {"code": -32602, "data": {"errors": [{"type": "offset_gap"}], "received_bytes": 7}}
    assert upload_command._resync_offset(gap) == 7
    conflict = {"code": -32602, "data": {"errors": [{"type": "chunk_conflict"}], "received_bytes": 7}}
    assert upload_command._resync_offset(conflict) is None
