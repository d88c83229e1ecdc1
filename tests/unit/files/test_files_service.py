"""FileService and the commit step against a fake session registry and a real temporary workspace.

Covers what the e2e tests cannot pin deterministically: that nothing can run between verification and the
write (R-FILE-6), the reclaim-then-retry order at `begin` (R-FILE-4) with a fake clock, and the link-safe
repair paths (R-FILE-7).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from pathlib import Path
from typing import Any, cast

import pytest
from waiting import until

from app.auth.policy import Principal
from app.config.schema import Limits
from app.files.errors import InvalidUpload, UploadLimit, UploadNotFound
from app.files.service import FileService, IncomingFile
from app.sessions.errors import AgentNotAllowed, SessionChanged, SessionNotFound, SessionNotOwned
from app.sessions.live.session import LiveSession
from app.sessions.registry import SessionRegistry
from rpc.core.wire import to_wire

OWNER = Principal(id="owner", admin=True)
ALICE = Principal(id="user:alice", admin=False, grants=frozenset({"files:create"}), agents=frozenset({"*"}))
BOB = Principal(id="user:bob", admin=False, grants=frozenset({"files:create"}), agents=frozenset({"*"}))
ALICE_NO_AGENT = Principal(id="user:alice", admin=False, grants=frozenset({"files:create"}))


class FakeSessions:
    def __init__(self) -> None:
        self.live: dict[str, LiveSession] = {}

    def open(self, session_id: str, owner: str, workspace: Path) -> LiveSession:
        workspace.mkdir(parents=True, exist_ok=True)
        live = LiveSession(session_id, owner, "default", "acp", workspace, "rpc")
        self.live[session_id] = live
        return live

    async def live_or_rehydrate(self, principal: Principal, session_id: str) -> LiveSession:
        live = self.live.get(session_id)
        if live is None:
            raise SessionNotFound
        if not principal.admin and principal.id != live.owner:
            raise SessionNotOwned
        return live


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def sessions() -> FakeSessions:
    return FakeSessions()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def limits() -> dict[str, Any]:
    return {}


@pytest.fixture
def service(sessions: FakeSessions, clock: Clock, limits: dict[str, Any], tmp_path: Path) -> FileService:
    staging = tmp_path / "staging"
    staging.mkdir()
    return FileService(cast(SessionRegistry, sessions), lambda: Limits(**limits), staging_dir=staging, clock=clock)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def as_(principal: Principal) -> Any:
    return lambda: principal


def uploads(ws: Path) -> list[str]:
    return sorted(os.listdir(ws / "uploads")) if (ws / "uploads").exists() else []


# -- file/attach and the commit step ------------------------------------------------------------------------


@pytest.mark.req("R-FILE-1")
async def test_attach_stores_by_hash_and_deduplicates(service: FileService, sessions: FakeSessions, tmp_path: Path):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    data = b"hello world"
    [first] = await service.attach(ALICE, "s1", [IncomingFile(b64(data), "Hi.TXT")], as_(ALICE))
    path = ws / "uploads" / f"{sha(data)}.txt"
    assert to_wire(first, snake=True) == {
        "ref_id": f"sha256:{sha(data)}",
        "marker": f"[Document: Hi.TXT] {path}",
        "workspace_path": str(path),
        "size_bytes": len(data),
        "deduplicated": False,
    }
    assert path.read_bytes() == data
    [again] = await service.attach(ALICE, "s1", [IncomingFile(b64(data), "other.txt", "image/png")], as_(ALICE))
    assert again.deduplicated and again.workspace_path == str(path) and again.marker == f"[IMAGE:{path}]"
    assert uploads(ws) == [f"{sha(data)}.txt"]


@pytest.mark.req("R-FILE-6")
async def test_nothing_runs_between_verification_and_the_write(
    service: FileService, sessions: FakeSessions, tmp_path: Path
):
    """A policy change is a synchronous step on the loop; the earliest it can run after verification is the
    next loop iteration, and by then the file must be stored and indexed."""
    ws = tmp_path / "ws"
    live = sessions.open("s1", ALICE.id, ws)
    data = b"fixed policy"
    seen: list[bool] = []

    def policy_change() -> None:
        seen.append((ws / "uploads" / sha(data)).is_file() and bool(service.store.indexed(live)))

    def verify() -> Principal:
        asyncio.get_running_loop().call_soon(policy_change)  # "arrives after verification"
        return ALICE

    await service.attach(ALICE, "s1", [IncomingFile(b64(data))], verify)
    await until(lambda: seen, interval=0)  # the next loop iteration
    assert seen == [True]


@pytest.mark.req("R-FILE-6")
async def test_refused_verification_writes_nothing(service: FileService, sessions: FakeSessions, tmp_path: Path):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)

    class Revoked(Exception):
        pass

    def verify() -> Principal:
        raise Revoked

    with pytest.raises(Revoked):
        await service.attach(ALICE, "s1", [IncomingFile(b64(b"x"))], verify)
    # the principal re-resolved at the commit step no longer owns the session / may not use the agent
    with pytest.raises(SessionNotOwned):
        await service.attach(ALICE, "s1", [IncomingFile(b64(b"x"))], as_(BOB))
    with pytest.raises(AgentNotAllowed):
        await service.attach(ALICE, "s1", [IncomingFile(b64(b"x"))], as_(ALICE_NO_AGENT))
    assert not (ws / "uploads").exists()


@pytest.mark.req("R-FILE-6")
async def test_begin_checks_ownership_and_agent(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    with pytest.raises(SessionNotOwned):
        await service.begin(object(), BOB, "s1", size_bytes=1)
    with pytest.raises(AgentNotAllowed):
        await service.begin(object(), ALICE_NO_AGENT, "s1", size_bytes=1)
    with pytest.raises(SessionNotFound):
        await service.begin(object(), ALICE, "nope", size_bytes=1)
    assert service.budget.used == 0 and service.staged() == 0


@pytest.mark.req("R-FILE-6")
async def test_recreated_session_is_a_different_session(service: FileService, sessions: FakeSessions, tmp_path: Path):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    conn = object()
    up = (await service.begin(conn, ALICE, "s1", size_bytes=3)).upload_id
    service.chunk(conn, up, 0, b64(b"abc"))
    sessions.open("s1", ALICE.id, ws)  # closed and recreated with the same id: a new generation
    with pytest.raises(SessionChanged):
        await service.commit(conn, up, as_(ALICE))
    assert not (ws / "uploads").exists()
    assert service.budget.used == 0  # it can never commit: discarded
    with pytest.raises(UploadNotFound):
        await service.commit(conn, up, as_(ALICE))


# -- R-FILE-7 ---------------------------------------------------------------------------------------------


@pytest.mark.req("R-FILE-7")
@pytest.mark.parametrize("damage", ["edit", "delete", "symlink", "fifo", "hardlink"])
async def test_reupload_repairs_the_indexed_file(
    service: FileService, sessions: FakeSessions, tmp_path: Path, damage: str
):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    data = b"original bytes"
    [entry] = await service.attach(ALICE, "s1", [IncomingFile(b64(data), "a.bin")], as_(ALICE))
    stored = Path(entry.workspace_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"outside the workspace")
    if damage == "edit":
        stored.write_bytes(b"tampered bytes")
    elif damage == "delete":
        stored.unlink()
    elif damage == "symlink":
        stored.unlink()
        stored.symlink_to(victim)
    elif damage == "fifo":
        stored.unlink()
        os.mkfifo(stored)
    else:  # a hard link to a file outside: the new bytes must not land in the victim
        stored.unlink()
        os.link(victim, stored)
    [again] = await service.attach(ALICE, "s1", [IncomingFile(b64(data), "a.bin")], as_(ALICE))
    assert again.deduplicated
    assert not stored.is_symlink() and stored.is_file() and stored.read_bytes() == data
    assert victim.read_bytes() == b"outside the workspace"
    assert sorted(os.listdir(stored.parent)) == [stored.name]  # no temp file left behind


@pytest.mark.req("R-FILE-7")
async def test_uploads_dir_replaced_by_a_link_is_never_followed(
    service: FileService, sessions: FakeSessions, tmp_path: Path
):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / "uploads").symlink_to(elsewhere, target_is_directory=True)
    [entry] = await service.attach(ALICE, "s1", [IncomingFile(b64(b"data"))], as_(ALICE))
    assert not (ws / "uploads").is_symlink() and Path(entry.workspace_path).read_bytes() == b"data"
    assert os.listdir(elsewhere) == []


# -- uploads: limits, expiry, ownership -------------------------------------------------------------------


@pytest.mark.req("R-FILE-4")
async def test_per_connection_limit(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    conn = object()
    for _ in range(4):
        await service.begin(conn, ALICE, "s1", size_bytes=1)
    with pytest.raises(UploadLimit) as info:
        await service.begin(conn, ALICE, "s1", size_bytes=1)
    assert (info.value.name, info.value.limit) == ("uploads_per_connection", 4)
    await service.begin(object(), ALICE, "s1", size_bytes=1)  # another connection has its own four


@pytest.mark.req("R-FILE-4")
async def test_budget_reclaims_idle_uploads_then_retries_once(
    service: FileService, sessions: FakeSessions, clock: Clock, limits: dict[str, Any], tmp_path: Path
):
    limits.update(upload_budget_bytes=10_000, upload_idle_secs=60)
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    a, b, c = object(), object(), object()
    idle = (await service.begin(a, ALICE, "s1", size_bytes=4000)).upload_id
    clock.now += 30
    busy = (await service.begin(b, ALICE, "s1", size_bytes=4000)).upload_id
    with pytest.raises(UploadLimit) as info:  # nothing is idle long enough yet
        await service.begin(c, ALICE, "s1", size_bytes=4000)
    assert (info.value.name, info.value.limit) == ("upload_budget", 10_000)
    clock.now += 31  # `idle` is now idle for 61 s (its connection is still open), `busy` for 31 s
    await service.begin(c, ALICE, "s1", size_bytes=4000)
    with pytest.raises(UploadNotFound):
        service.chunk(a, idle, 0, b64(b"x"))
    assert service.chunk(b, busy, 0, b64(b"x")) == 1


@pytest.mark.req("R-FILE-4")
async def test_idle_upload_is_discarded_on_access(
    service: FileService, sessions: FakeSessions, clock: Clock, limits: dict[str, Any], tmp_path: Path
):
    limits.update(upload_idle_secs=5)
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    conn = object()
    up = (await service.begin(conn, ALICE, "s1", size_bytes=2)).upload_id
    clock.now += 4
    service.chunk(conn, up, 0, b64(b"a"))  # activity resets the idle clock
    clock.now += 4
    service.chunk(conn, up, 1, b64(b"b"))
    clock.now += 6
    with pytest.raises(UploadNotFound):
        await service.commit(conn, up, as_(ALICE))
    assert service.budget.used == 0


@pytest.mark.req("R-FILE-3")
async def test_uploads_belong_to_their_connection(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    mine, other = object(), object()
    up = (await service.begin(mine, ALICE, "s1", size_bytes=5)).upload_id
    used = service.budget.used
    assert used > 5
    with pytest.raises(UploadNotFound):
        service.chunk(other, up, 0, b64(b"x"))
    with pytest.raises(UploadNotFound):
        await service.commit(other, up, as_(ALICE))
    service.connection_closed(mine)
    assert service.budget.used == 0 and service.staged() == 0
    with pytest.raises(UploadNotFound):
        service.chunk(mine, up, 0, b64(b"x"))


@pytest.mark.req("R-FILE-2")
async def test_commit_rules(service: FileService, sessions: FakeSessions, tmp_path: Path):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    conn = object()
    data = os.urandom(3000)
    up = (await service.begin(conn, ALICE, "s1", size_bytes=3000, filename="r.Bin", sha256=sha(data))).upload_id
    service.chunk(conn, up, 0, b64(data[:1000]))
    with pytest.raises(InvalidUpload) as info:
        await service.commit(conn, up, as_(ALICE))
    assert info.value.type == "incomplete" and info.value.data["received_bytes"] == 1000
    assert service.chunk(conn, up, 0, b64(data[:1000])) == 1000  # still as it was
    service.chunk(conn, up, 1000, b64(data[1000:]))
    entry = await service.commit(conn, up, as_(ALICE))
    assert Path(entry.workspace_path).read_bytes() == data and entry.workspace_path.endswith(".bin")
    assert await service.commit(conn, up, as_(ALICE)) == entry  # a retried commit: the same entry
    assert service.budget.used == 0
    with pytest.raises(UploadNotFound):
        service.chunk(conn, up, 0, b64(data[:10]))


@pytest.mark.req("R-FILE-2")
async def test_sha256_mismatch_discards(service: FileService, sessions: FakeSessions, tmp_path: Path):
    ws = tmp_path / "ws"
    sessions.open("s1", ALICE.id, ws)
    conn = object()
    up = (await service.begin(conn, ALICE, "s1", size_bytes=3, sha256=sha(b"abd"))).upload_id
    service.chunk(conn, up, 0, b64(b"abc"))
    with pytest.raises(InvalidUpload) as info:
        await service.commit(conn, up, as_(ALICE))
    assert info.value.type == "sha256_mismatch"
    with pytest.raises(UploadNotFound):
        await service.commit(conn, up, as_(ALICE))
    assert service.budget.used == 0 and not (ws / "uploads").exists()


@pytest.mark.req("R-FILE-2")
async def test_chunk_payload_checks(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    conn = object()
    up = (await service.begin(conn, ALICE, "s1", size_bytes=2_000_000)).upload_id
    for bad in ("not base64!", "YWJj\n", "YWJ"):
        with pytest.raises(InvalidUpload) as info:
            service.chunk(conn, up, 0, bad)
        assert info.value.type == "invalid_base64"
    for size in (1_048_577, 1_048_578, 1_500_000):
        with pytest.raises(InvalidUpload) as info:
            service.chunk(conn, up, 0, b64(b"\0" * size))
        assert info.value.type == "chunk_too_large" and info.value.data["limit"] == 1_048_576
    assert service.chunk(conn, up, 0, b64(b"\0" * 1_048_576)) == 1_048_576


@pytest.mark.req("R-FILE-1")
async def test_attach_limit_after_decoding(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    with pytest.raises(InvalidUpload) as info:
        await service.attach(ALICE, "s1", [IncomingFile(b64(b"\0" * 10_000_001))], as_(ALICE))
    assert info.value.data == {"limit": 10_000_000} and info.value.field == "files.0.data_b64"


async def test_prompt_with_attachments(service: FileService, sessions: FakeSessions, tmp_path: Path):
    sessions.open("s1", ALICE.id, tmp_path / "ws")
    entries = await service.attach(
        ALICE, "s1", [IncomingFile(b64(b"a"), "a.png"), IncomingFile(b64(b"b"), "b.txt")], as_(ALICE)
    )
    wire = [to_wire(e, snake=True) for e in entries]
    text = await service.prompt_with_attachments(ALICE, "s1", "look", wire)
    assert text == f"look\n\n{entries[0].marker}\n{entries[1].marker}"
    assert await service.prompt_with_attachments(ALICE, "s1", "", wire[:1]) == entries[0].marker
    with pytest.raises(SessionNotOwned):
        await service.prompt_with_attachments(BOB, "s1", "x", wire)
