"""SIGKILL anywhere (issue 16): kill the daemon at random points of streaming turns, upload commits,
`config/set-many` writes, pairing, `session/kill`/`session/delete` and trims; restart it on the same config dir
and check the invariants after every kill (SPEC §7.4 R-ACP-1..10, R-CFG-5, R-FILE-2/3, R-AUTH-4, §15 R-STORE-2).

    python benchmarks/kill_kit.py                          # 30 kills, SQLite, seed from the clock, at most 300 s
    python benchmarks/kill_kit.py --seed 16                # reproducible
    python benchmarks/kill_kit.py --database-url postgresql+asyncpg://postgres@127.0.0.1:PORT/postgres

The kills are spread over six operation kinds, each with its own config dir ("world") kept across its kills, in a
shuffled round-robin (so any 6 consecutive kills cover every kind once). Each kill:

* **stream** — one round of `benchmarks/crash_loop.py` (`run_round`): a `/sleep`, `/bash` or text turn killed at
  a random delay; one marker per interrupted turn, the early text kept exactly once, no lost or repeated row, a
  provider-safe follow-up, no second marker (R-ACP-4/5/6).
* **trim** — back-to-back text turns on a session with `[context] max_messages = 4` (a trim every other turn),
  killed at a random delay; every answered turn's two rows are there once, in order, the cut turn's rows are a
  prefix of its reply with one marker iff it was unfinished on disk; every announced `history_trimmed` checkpoint is
  covered by a committed snapshot (R-ACP-2); the follow-up `/context` is the latest snapshot plus the rows after
  its boundary, minus the marker (R-ACP-5).
* **upload** — `file/upload/begin|chunk|commit` of random 0.5 to 4 MB files, chunks pipelined; killed at a random
  delay or a few ms after a commit was sent (inside the commit step); no staged bytes left in `<data>/staging`,
  every stored `uploads/<sha256>[.ext]` file is whole (its name is its hash), every acknowledged commit is there;
  after the restart a new upload works (R-FILE-1/2/3).
* **config** — back-to-back `config/set-many` of two props carrying one generation number (one of them a prompt of
  random length, so the file changes size); `config.toml` must parse, keep its comment, and hold one generation for
  both props, between the last acknowledged and the last sent (R-CFG-2/5); the daemon starts and `config/get`
  agrees.
* **pairing** — `pairing/create` and `pairing/revoke` back to back; every acknowledged token is listed and
  authenticates unless its revocation was sent, every acknowledged revocation holds, an unacknowledged create is
  either listed and working or absent; a listed token always authenticates, an unlisted one never (R-AUTH-4).
* **session** — three sessions with history, one of them mid-`/sleep`, then `session/kill` or `session/delete` on
  each; after the restart each is intact (and recovers with one marker iff its turn was cut), a readable tombstone
  that refuses `session/new`, or gone with every row (R-ACP-8/9/10).

After every kill, before the restart, the database is checked whole: no transcript, turn or snapshot row without
its session, dense indexes (`next_index` rows, 0..n-1), tombstones with no open turn or incomplete row, snapshots
with a boundary inside the transcript and a JSON list, pairing rows complete (R-STORE-2). Stray temp files
(`.config.toml.*.tmp`, `uploads/.*.tmp`) are counted and reported as `stray_tmp` (not a violation: documented as
ignored).

Prints one line per kill and one summary line:

    kill-kit: kills=30 recovered=30 violations=0 backend=sqlite elapsed=95.2s seed=16 stray_tmp=0

and exits 1 on any violation (or when the time limit stopped it before `--kills`). The e2e suite runs six seeded
kills, one per kind (`tests/e2e/test_e2e_kill_kit.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
for _dir in (str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "e2e"), str(REPO_ROOT / "benchmarks")):
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

import crash_loop  # noqa: E402
import db_backend  # noqa: E402
from crash_loop import TimedPeer, check_context_lines, kill_daemon, markers, restart, transcript  # noqa: E402
from db_backend import query  # noqa: E402
from e2e_harness import Daemon, DaemonFactory  # noqa: E402
from session_client import Peer  # noqa: E402

__all__ = ["KINDS", "KillOutcome", "Report", "db_problems", "run_kit", "schedule"]

KINDS: Final = ("stream", "trim", "upload", "config", "pairing", "session")
SESSION_NOT_FOUND: Final = -32000
UNAUTHENTICATED: Final = -32010
UPLOAD_NOT_FOUND: Final = -32004
CONFIG_COMMENT: Final = "# kill-kit: this comment must survive every config write"

TRIM_CONFIG: Final = """\
[agents.auto]
auto_approve = ["bash"]

[context]
max_messages = 4
"""

SESSION_CONFIG: Final = """\
[agents.auto]
auto_approve = ["bash"]
"""

CONFIG_CONFIG: Final = f"""\
{CONFIG_COMMENT}
[agents.kk]
model = "model-0"
system_prompt = "gen 0 "
"""

PAIRING_CONFIG: Final = """\
[permission_profiles.runner]
grants = { sessions = ["create", "execute", "read"] }
allowed_agents = ["*"]

[users.kk]
permission_profiles = ["runner"]
"""


def upload_config(workspace: Path) -> str:
    return f"[agents.default]\nworkspace_dir = {json.dumps(str(workspace))}\n"


# ------------------------------------------------------------------------------------------------ helpers


def schedule(kills: int, rng: random.Random) -> list[str]:
    """Kinds in a shuffled round-robin: every run of len(KINDS) consecutive kills covers each kind once."""
    out: list[str] = []
    while len(out) < kills:
        cycle = list(KINDS)
        rng.shuffle(cycle)
        out.extend(cycle)
    return out[:kills]


async def stop_task(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(task, 3)


async def settle(task: asyncio.Task[Any]) -> None:
    """Stop an operation loop after the kill; an assertion it failed before the kill (a wrong answer) is raised,
    a request cut by the kill is not."""
    await stop_task(task)
    if task.done() and not task.cancelled():
        exc = task.exception()
        if isinstance(exc, AssertionError) and "closed" not in str(exc):
            raise exc


async def close_quietly(peer: Peer) -> None:
    with contextlib.suppress(Exception):
        await peer.close()


def db_problems(url: str) -> list[str]:
    """Whole-database invariants, read after a kill with no daemon on it (R-STORE-2)."""
    problems: list[str] = []
    for child in ("acp_transcript", "acp_turns", "acp_snapshots"):
        (orphans,) = query(
            url,
            f"SELECT COUNT(*) FROM {child} c WHERE NOT EXISTS "
            "(SELECT 1 FROM acp_sessions s WHERE s.session_id = c.session_id)",
        )[0]
        if orphans:
            problems.append(f"{orphans} {child} rows without their session")
    for sid, next_index, count, top in query(
        url,
        "SELECT s.session_id, s.next_index, COUNT(t.idx), COALESCE(MAX(t.idx), -1) FROM acp_sessions s "
        "LEFT JOIN acp_transcript t ON t.session_id = s.session_id GROUP BY s.session_id, s.next_index",
    ):
        if not (count == next_index and top == next_index - 1):
            problems.append(f"session {sid}: next_index={next_index} but {count} rows, max index {top}")
    (open_in_tombstones,) = query(
        url,
        "SELECT COUNT(*) FROM acp_turns t JOIN acp_sessions s ON s.session_id = t.session_id "
        "WHERE s.killed_at IS NOT NULL AND t.finished_at IS NULL",
    )[0]
    (incomplete_in_tombstones,) = query(
        url,
        "SELECT COUNT(*) FROM acp_transcript t JOIN acp_sessions s ON s.session_id = t.session_id "
        "WHERE s.killed_at IS NOT NULL AND NOT t.complete",
    )[0]
    if open_in_tombstones or incomplete_in_tombstones:
        problems.append(
            f"tombstones with {open_in_tombstones} open turns and {incomplete_in_tombstones} incomplete rows"
        )
    for sid, boundary, messages, next_index in query(
        url,
        "SELECT p.session_id, p.boundary, p.messages, s.next_index FROM acp_snapshots p "
        "JOIN acp_sessions s ON s.session_id = p.session_id",
    ):
        if not -1 <= boundary < next_index:
            problems.append(f"session {sid}: snapshot boundary {boundary} outside -1..{next_index - 1}")
        try:
            ok = isinstance(json.loads(messages), list)
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"session {sid}: snapshot messages are not a JSON list")
    for token_id, user, sha, created in query(
        url, 'SELECT token_id, "user", token_sha256, created_at FROM pairing_tokens'
    ):
        if not (user and created is not None and re.fullmatch(r"[0-9a-f]{64}", sha or "")):
            problems.append(f"pairing token {token_id} is incomplete: user={user!r} sha={sha!r} created={created}")
    return problems


def latest_snapshot(url: str, session_id: str) -> tuple[int, list[dict[str, Any]]] | None:
    """(boundary, messages) of the session's newest snapshot, or None."""
    rows = query(
        url,
        "SELECT boundary, messages FROM acp_snapshots WHERE session_id = :sid ORDER BY snapshot_id DESC LIMIT 1",
        sid=session_id,
    )
    return None if not rows else (rows[0][0], json.loads(rows[0][1]))


def stray_temp_files(*directories: Path) -> list[str]:
    found: list[str] = []
    for directory in directories:
        with contextlib.suppress(FileNotFoundError):
            found += [str(directory / n) for n in os.listdir(directory) if n.startswith(".") and n.endswith(".tmp")]
    return found


def sleep_reply(secs: str) -> Callable[[str], bool]:
    """Whether a text is a prefix of a `/sleep S` reply: `Sleeping for S s`, dots, ` Done.`. Unlike crash_loop's
    oracle, any number of dots: the daemon's `/sleep` sometimes streams far more than one per 0.1 s (seen: 98 for
    `/sleep 1.9`, with the transcript row equal to what was streamed), which is no durability matter; what was
    streamed and what was kept are still compared by crash_loop's own checks."""
    head, tail = f"Sleeping for {secs} s", " Done."

    def ok(text: str) -> bool:
        if len(text) <= len(head):
            return head.startswith(text)
        rest = text[len(head) :]
        return text.startswith(head) and tail.startswith(rest.lstrip("."))

    return ok


def preview(content: str | None) -> str:
    """How the scripted provider's `/context` shows one message (app/agents/scripted.py `_preview`)."""
    return (content or "")[:80].replace("\r", " ").replace("\n", " ")


# ------------------------------------------------------------------------------------------------ worlds


@dataclass
class KillOutcome:
    detail: str
    stray_tmp: int = 0


class World:
    """One operation kind on one config dir, kept across its kills; `kill_round` kills, restarts and checks."""

    kind = "?"
    config = ""

    def __init__(self, factory: DaemonFactory, *, quick: bool) -> None:
        self.factory = factory
        self.quick = quick
        self.daemon: Daemon | None = None
        self.rounds = 0
        self.strays: set[str] = set()  # stray temp files seen so far

    def new_strays(self, *directories: Path) -> list[str]:
        found = [name for name in stray_temp_files(*directories) if name not in self.strays]
        self.strays.update(found)
        return found

    async def setup(self) -> None:
        self.daemon = self.factory.start(self.config)

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        raise NotImplementedError

    def after_kill(self) -> tuple[Daemon, int]:
        """Database invariants on the dead daemon's database, then the restart (which must work)."""
        assert self.daemon is not None and not self.daemon.is_running()
        problems = db_problems(self.daemon.database_url)
        assert not problems, f"database after the kill: {problems}"
        self.daemon = restart(self.factory, self.daemon)
        return self.daemon, 0

    def reset(self) -> None:
        if self.daemon is not None:
            self.daemon.kill()
        self.daemon = None


class StreamWorld(World):
    """crash_loop's rounds, unchanged: its checks are this kind's checks."""

    kind = "stream"
    config = crash_loop.CONFIG

    async def setup(self) -> None:
        await super().setup()
        assert self.daemon is not None
        async with await Peer.open(self.daemon) as peer:
            self.session_id = (await peer.new_session(agentAlias=crash_loop.AGENT))["sessionId"]

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None
        self.rounds += 1
        kill = crash_loop.pick_kill(rng, scale=0.6 if self.quick else 1.0)
        if kill.kind == "sleep":
            kill = dataclasses.replace(kill, full_text=sleep_reply(kill.prompt.split()[1]))
        resume = "new" if self.rounds % 2 else "prompt"
        # crash_loop kills, restarts and checks by itself (its checks are listed in its docstring)
        self.daemon, result = await crash_loop.run_round(
            self.factory, self.daemon, self.session_id, kill, resume=resume
        )
        return KillOutcome(result.line())


class TrimWorld(World):
    """Back-to-back text turns on a session that trims every other turn, killed at a random point."""

    kind = "trim"
    config = TRIM_CONFIG

    async def setup(self) -> None:
        await super().setup()
        assert self.daemon is not None
        async with await Peer.open(self.daemon) as peer:
            self.session_id = (await peer.new_session(agentAlias="auto"))["sessionId"]
        self.words = 0

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None
        sid = self.session_id
        peer = await TimedPeer.open(self.daemon)
        _rows, base = await transcript(peer, sid)
        acked: list[str] = []
        sent: list[str] = []
        checkpoints: list[int] = []
        op_rng = random.Random(rng.random())

        async def turns() -> None:
            while True:
                self.words += 1
                prompt = f"t{self.words} " + " ".join(
                    f"w{op_rng.randrange(1000)}" for _ in range(op_rng.randrange(1, 6))
                )
                sent.append(prompt)
                turn = await peer.prompt(sid, prompt, timeout=10)
                assert turn.result["stopReason"] == "end_turn", turn.result
                checkpoints.extend(u["checkpoint"] for u in turn.of_type("history_trimmed"))
                acked.append(prompt)

        task = asyncio.create_task(turns())
        await asyncio.sleep(rng.uniform(0.02, 0.3))
        kill_daemon(self.daemon)
        await settle(task)
        # updates that arrived before the kill count too: history_trimmed of the cut turn
        seen = [u["checkpoint"] for u in peer.updates if u.get("type") == "history_trimmed"]
        await close_quietly(peer)
        url = self.daemon.database_url
        unfinished = crash_loop.unfinished_turns(self.daemon, sid)
        snapshot = latest_snapshot(url, sid)
        if seen:  # R-ACP-2: announced only after the snapshot and its boundary committed together
            assert snapshot is not None and snapshot[0] >= max(seen), (
                f"history_trimmed announced checkpoint {max(seen)}, latest snapshot {snapshot and snapshot[0]}"
            )
        daemon, _ = self.after_kill()
        async with await Peer.open(daemon) as p:
            opened = await p.new_session(sessionId=sid)
            assert opened["resumed"] is True, opened
            rows, total = await transcript(p, sid)
            assert [r["index"] for r in rows] == list(range(total)), "indexes must stay dense and stable"
            new = rows[base:]
            expect: list[tuple[str, str]] = []
            for prompt in acked:
                expect += [("user", prompt), ("assistant", f"You said: «{prompt}»")]
            got = [(r["role"], r["content"]) for r in new[: len(expect)]]
            assert got == expect, f"answered turns lost or repeated: {got} vs {expect}"
            cut = new[len(expect) :]
            cut_marker = markers(cut)
            assert len(cut_marker) == (1 if unfinished else 0), f"markers {cut_marker}, unfinished {unfinished}: {cut}"
            if cut:
                in_flight = sent[len(acked)] if len(sent) > len(acked) else None
                assert in_flight is not None and cut[0]["role"] == "user" and cut[0]["content"] == in_flight, cut
                body = [r for r in cut[1:] if r["role"] != "marker"]
                assert all(r["role"] == "assistant" for r in body) and len(body) <= 1, cut
                kept = "".join(r["content"] for r in body)
                assert f"You said: «{in_flight}»".startswith(kept), f"kept text is not a prefix of the reply: {kept!r}"
                if cut_marker:
                    assert cut[-1] is cut_marker[0], cut
            follow = await p.prompt(sid, "/context", timeout=15)
            assert follow.result["stopReason"] == "end_turn", follow.result
            lines = follow.result["content"].splitlines()
            check_context_lines(lines)
            lines = [line for line in lines if not line.startswith("system:")]
            if snapshot is not None:  # R-ACP-5: the latest snapshot plus the rows after its boundary, no marker
                boundary, messages = snapshot
                expect_lines = [f"{m['role']}: {preview(m.get('content'))}" for m in messages]
                expect_lines += [
                    f"{r['role']}: {preview(r['content'])}"
                    for r in rows
                    if r["index"] > boundary and r["role"] != "marker"
                ]
                expect_lines.append("user: /context")
                assert lines == expect_lines, (
                    f"context is not snapshot + rows after {boundary}: {lines} vs {expect_lines}"
                )
        detail = (
            f"turns acked={len(acked)} trims_seen={len(seen)} cut_rows={len(cut)} marker={len(cut_marker)} "
            f"snapshot_boundary={snapshot[0] if snapshot else None}"
        )
        return KillOutcome(detail)


class UploadWorld(World):
    kind = "upload"

    async def setup(self) -> None:
        root = self.factory.tmpdir()
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.daemon = self.factory.start(upload_config(self.workspace), root=root)
        async with await Peer.open(self.daemon) as peer:
            self.session_id = (await peer.new_session())["sessionId"]
        self.committed: dict[str, int] = {}  # stored name -> size, acknowledged commits (all kills)
        self.last_upload_id: str | None = None

    @property
    def uploads(self) -> Path:
        return self.workspace / "uploads"

    def check_disk(self, staging: Path) -> int:
        """No staged bytes left behind; every stored file is whole; every acknowledged commit is there."""
        leftovers = []
        with contextlib.suppress(FileNotFoundError):
            leftovers = [(n, (staging / n).stat().st_size) for n in os.listdir(staging)]
        assert not leftovers, f"orphan staged upload bytes in {staging}: {leftovers}"
        stored = 0
        names = os.listdir(self.uploads) if self.uploads.exists() else []
        for name in names:
            if name.startswith("."):
                continue
            digest = hashlib.sha256((self.uploads / name).read_bytes()).hexdigest()
            assert name.split(".", 1)[0] == digest, f"stored upload {name} is not whole (its bytes hash to {digest})"
            stored += 1
        for name, size in self.committed.items():
            path = self.uploads / name
            assert path.exists() and path.stat().st_size == size, f"acknowledged upload {name} is missing"
        return stored

    async def upload(self, peer: Peer, rng: random.Random, size: int, commit_sent: asyncio.Event | None) -> str:
        data = rng.randbytes(size)
        sha = hashlib.sha256(data).hexdigest()
        begun = await peer.call(
            "file/upload/begin",
            {
                "session_id": self.session_id,
                "size_bytes": size,
                "filename": f"k{rng.randrange(10**6)}.bin",
                "sha256": sha,
            },
        )
        uid, step = begun["upload_id"], begun["chunk_bytes"]
        self.last_upload_id = uid
        futures = [
            await peer.start(
                "file/upload/chunk",
                {"upload_id": uid, "offset": off, "data_b64": base64.b64encode(data[off : off + step]).decode()},
            )
            for off in range(0, size, step)
        ]
        for fut in futures:
            response = await asyncio.wait_for(fut, 30)
            assert "result" in response, response
        fut = await peer.start("file/upload/commit", {"upload_id": uid})
        if commit_sent is not None:
            commit_sent.set()
        response = await asyncio.wait_for(fut, 30)
        assert "result" in response, response
        entry = response["result"]
        name = Path(entry["workspace_path"]).name
        assert entry["size_bytes"] == size and name.startswith(sha), entry
        return name

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None
        staging = self.daemon.data_dir / "staging"
        peer = await Peer.open(self.daemon)
        commit_sent = asyncio.Event()
        acked = 0
        op_rng = random.Random(rng.random())

        async def uploads() -> None:
            nonlocal acked
            while True:
                size = op_rng.randrange(500_000, 2_000_000 if self.quick else 4_000_000)
                name = await self.upload(peer, op_rng, size, commit_sent)
                self.committed[name] = size
                acked += 1

        task = asyncio.create_task(uploads())
        at_commit = rng.random() < 0.5
        if at_commit:  # inside the commit step: a few ms after a commit left
            await asyncio.wait_for(commit_sent.wait(), 20)
            await asyncio.sleep(rng.uniform(0.0, 0.012))
            where = "commit"
        else:
            await asyncio.sleep(rng.uniform(0.02, 0.5 if self.quick else 1.0))
            where = "anywhere"
        kill_daemon(self.daemon)
        await settle(task)
        await close_quietly(peer)
        stored = self.check_disk(staging)
        stray = self.new_strays(self.uploads)
        daemon, _ = self.after_kill()
        self.check_disk(staging)
        async with await Peer.open(daemon) as p:  # the service works after the restart
            if self.last_upload_id is not None:  # R-FILE-3: an upload dies with its connection (and the daemon)
                code, _data = await p.error("file/upload/commit", {"upload_id": self.last_upload_id})
                assert code == UPLOAD_NOT_FOUND, f"a staged upload survived the kill: {code}"
            name = await self.upload(p, rng, rng.randrange(1, 200_000), None)
            self.committed[name] = (self.uploads / name).stat().st_size
        return KillOutcome(f"at={where:8} commits acked={acked} stored files={stored} new stray: {stray}", len(stray))


class ConfigWorld(World):
    kind = "config"
    config = CONFIG_CONFIG

    async def setup(self) -> None:
        await super().setup()
        self.generation = 0  # the last generation sent (they are never reused)
        self.on_disk = 0  # the generation config.toml held after the last kill
        self.pads: dict[int, int] = {0: 0}

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None and self.daemon.config_dir is not None
        path = self.daemon.config_dir / "config.toml"
        peer = await Peer.open(self.daemon)
        acked = [self.on_disk]
        first_sent = self.generation + 1
        op_rng = random.Random(rng.random())

        async def writes() -> None:
            while True:
                self.generation += 1
                g = self.generation
                self.pads[g] = op_rng.randrange(0, 30_000)
                sets = [
                    {"prop": "agents.kk.system_prompt", "value": f"gen {g} " + "x" * self.pads[g]},
                    {"prop": "agents.kk.model", "value": f"model-{g}"},
                ]
                result = await peer.call("config/set-many", {"sets": sets})
                assert result == {"props": ["agents.kk.system_prompt", "agents.kk.model"], "set": True}, result
                acked.append(g)

        task = asyncio.create_task(writes())
        await asyncio.sleep(rng.uniform(0.01, 0.4 if self.quick else 0.8))
        kill_daemon(self.daemon)
        await settle(task)
        await close_quietly(peer)
        text = path.read_text()
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AssertionError(f"config.toml is torn after the kill ({len(text)} bytes): {exc}") from None
        assert CONFIG_COMMENT in text, "the user's comment was lost"
        agent = parsed["agents"]["kk"]
        g = int(agent["model"].removeprefix("model-"))
        assert agent["system_prompt"] == f"gen {g} " + "x" * self.pads[g], f"props of different writes (model-{g})"
        assert acked[-1] <= g <= self.generation, f"generation {g} outside acked {acked[-1]}..sent {self.generation}"
        assert g == acked[-1] or g >= first_sent, g
        stray = self.new_strays(path.parent)
        daemon, _ = self.after_kill()
        async with await Peer.open(daemon) as p:
            got = await p.call("config/get", {"prop": "agents.kk.model"})
            assert got["value"] == f"model-{g}", got
        self.on_disk = g
        return KillOutcome(
            f"writes acked={len(acked) - 1} sent={self.generation - first_sent + 1} file=gen {g} "
            f"({len(text)} bytes) new stray: {[Path(s).name for s in stray]}",
            len(stray),
        )


class PairingWorld(World):
    kind = "pairing"
    config = PAIRING_CONFIG

    async def setup(self) -> None:
        await super().setup()
        self.tokens: dict[str, str] = {}  # token id -> token, acknowledged creates
        self.revoke_acked: set[str] = set()
        self.landed_unacked: set[str] = set()  # creates cut by a kill that were committed: ids seen in a listing
        self.labels = 0

    async def authenticates(self, daemon: Daemon, token: str) -> bool:
        client = await daemon.connect()
        try:
            response = await client.request("initialize", {"protocolVersion": 1, "authToken": token})
        finally:
            await client.close()
        if "result" in response:
            return True
        assert response["error"]["code"] == UNAUTHENTICATED, response
        return False

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None
        peer = await Peer.open(self.daemon)
        touched: list[str] = []
        revoke_sent: set[str] = set()
        in_flight_label: list[str | None] = [None]
        creates = revokes = 0
        op_rng = random.Random(rng.random())

        async def ops() -> None:
            nonlocal creates, revokes
            while True:
                active = [t for t in self.tokens if t not in self.revoke_acked and t not in revoke_sent]
                if active and op_rng.random() < 0.4:
                    token_id = op_rng.choice(active)
                    revoke_sent.add(token_id)
                    touched.append(token_id)
                    result = await peer.call("pairing/revoke", {"tokenId": token_id})
                    assert result == {"tokenId": token_id, "revoked": True}, result
                    self.revoke_acked.add(token_id)
                    revokes += 1
                else:
                    self.labels += 1
                    label = f"kk-{self.labels}"
                    in_flight_label[0] = label
                    result = await peer.call("pairing/create", {"user": "kk", "label": label})
                    in_flight_label[0] = None
                    assert result["token"].startswith("zc_") and result["user"] == "kk", result
                    self.tokens[result["tokenId"]] = result["token"]
                    touched.append(result["tokenId"])
                    creates += 1

        task = asyncio.create_task(ops())
        await asyncio.sleep(rng.uniform(0.01, 0.3 if self.quick else 0.6))
        kill_daemon(self.daemon)
        await settle(task)
        await close_quietly(peer)
        daemon, _ = self.after_kill()
        async with await Peer.open(daemon) as p:
            listed = {t["tokenId"]: t for t in (await p.call("pairing/list"))["tokens"]}
        for token_id in self.tokens:
            if token_id in self.revoke_acked:
                assert token_id not in listed, f"revoked token {token_id} is listed again"
            elif token_id not in revoke_sent:
                assert token_id in listed, f"acknowledged token {token_id} was lost"
        unknown = [t for t in listed if t not in self.tokens and t not in self.landed_unacked]
        if unknown:  # only this round's unacknowledged create may have landed, whole
            labels = [listed[t]["label"] for t in unknown]
            assert labels == [in_flight_label[0]], f"tokens nobody created: {unknown} {labels} ({in_flight_label})"
            self.landed_unacked.update(unknown)
        # a listed token authenticates, an unlisted one never: the ones this round touched plus a few others
        sample = list(dict.fromkeys(touched[-6:] + rng.sample(sorted(self.tokens), min(3, len(self.tokens)))))
        for token_id in sample:
            works = await self.authenticates(daemon, self.tokens[token_id])
            assert works == (token_id in listed), f"token {token_id}: listed={token_id in listed} works={works}"
        for token_id in revoke_sent - self.revoke_acked:  # settled one way or the other now
            if token_id not in listed:
                self.revoke_acked.add(token_id)
        return KillOutcome(
            f"creates acked={creates} revokes acked={revokes} "
            f"in flight={'create' if in_flight_label[0] else 'revoke/none'} "
            f"listed={len(listed)} checked tokens={len(sample)}"
        )


class SessionWorld(World):
    kind = "session"
    config = SESSION_CONFIG

    async def kill_round(self, rng: random.Random) -> KillOutcome:
        assert self.daemon is not None
        peer = await Peer.open(self.daemon)
        sessions: list[str] = []
        rows_before: dict[str, int] = {}
        for _ in range(3):
            sid = (await peer.new_session(agentAlias="auto"))["sessionId"]
            for k in range(rng.randrange(1, 3)):
                await peer.prompt(sid, f"hello {k}")
            sessions.append(sid)
            rows_before[sid] = (await transcript(peer, sid))[1]
        busy = rng.choice(sessions)
        runner = await Peer.open(self.daemon)
        mark, _prompt = await runner.start_prompt(busy, "/sleep 2")
        await runner.wait_update("agent_message_chunk", session_id=busy, start=mark)
        plan = {sid: rng.choice(["kill", "delete"]) for sid in sessions}
        sent: dict[str, str] = {}
        acked: dict[str, str] = {}

        async def ops() -> None:
            for sid in rng.sample(sessions, len(sessions)):
                sent[sid] = plan[sid]
                await peer.call(f"session/{plan[sid]}", {"sessionId": sid})
                acked[sid] = plan[sid]

        task = asyncio.create_task(ops())
        await asyncio.sleep(rng.uniform(0.0, 0.02))  # the three calls take about that long
        kill_daemon(self.daemon)
        await settle(task)
        await close_quietly(peer)
        await close_quietly(runner)
        unfinished = {sid: crash_loop.unfinished_turns(self.daemon, sid) for sid in sessions}
        daemon, _ = self.after_kill()
        states: list[str] = []
        async with await Peer.open(daemon) as p:
            listed = {s["sessionId"]: s for s in (await p.call("session/list", {"includeKilled": True}))["sessions"]}
            for sid in sessions:
                if sid not in listed:
                    state = "deleted"
                    code, _data = await p.error("session/messages", {"sessionId": sid})
                    assert code == SESSION_NOT_FOUND, code
                elif listed[sid].get("killed"):
                    state = "killed"
                    rows, total = await transcript(p, sid)  # a tombstone stays readable
                    assert total >= rows_before[sid] and not markers(rows), rows
                    code, _data = await p.error("session/new", {"sessionId": sid})
                    assert code == SESSION_NOT_FOUND, code
                else:
                    state = "intact"
                    opened = await p.new_session(sessionId=sid)
                    assert opened["resumed"] is True, opened
                    rows, total = await transcript(p, sid)
                    assert [r["content"] for r in rows[: rows_before[sid]]] == [
                        c for k in range(rows_before[sid] // 2) for c in (f"hello {k}", f"You said: «hello {k}»")
                    ], rows
                    assert len(markers(rows)) == (1 if unfinished[sid] else 0), (unfinished[sid], rows)
                    follow = await p.prompt(sid, "/context", timeout=15)
                    check_context_lines(follow.result["content"].splitlines())
                if sid in acked:
                    assert state == {"kill": "killed", "delete": "deleted"}[acked[sid]], (
                        f"acknowledged session/{acked[sid]} of {sid} but it is {state}"
                    )
                elif sid in sent:
                    assert state in ("intact", {"kill": "killed", "delete": "deleted"}[sent[sid]]), (sid, state)
                else:
                    assert state == "intact", (sid, state)
                states.append(f"{plan[sid]}:{'ack' if sid in acked else 'sent' if sid in sent else 'no'}->{state}")
        return KillOutcome(" ".join(states) + f" busy_marker={int(bool(unfinished[busy]))}")


WORLDS: Final[dict[str, type[World]]] = {
    "stream": StreamWorld,
    "trim": TrimWorld,
    "upload": UploadWorld,
    "config": ConfigWorld,
    "pairing": PairingWorld,
    "session": SessionWorld,
}


# ------------------------------------------------------------------------------------------------ the run


@dataclass
class Report:
    seed: int
    backend: str
    kills: int = 0
    recovered: int = 0
    stray_tmp: int = 0
    elapsed: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def violations(self) -> int:
        return len(self.failures)

    def summary(self) -> str:
        return (
            f"kill-kit: kills={self.kills} recovered={self.recovered} violations={self.violations} "
            f"backend={self.backend} elapsed={self.elapsed:.1f}s seed={self.seed} stray_tmp={self.stray_tmp}"
        )


async def run_kit(
    factory: DaemonFactory,
    *,
    kills: int,
    seed: int,
    time_limit: float = 300.0,
    round_timeout: float = 40.0,
    quick: bool = False,
    out: Any = print,
) -> Report:
    rng = random.Random(seed)
    report = Report(seed=seed, backend=db_backend.backend())
    worlds: dict[str, World] = {}
    started = time.monotonic()
    for n, kind in enumerate(schedule(kills, rng), start=1):
        if time.monotonic() - started > time_limit:
            out(f"time limit reached after {n - 1} kills")
            report.stopped_early = True
            break
        round_started = time.monotonic()
        world = worlds.get(kind)
        try:
            if world is None:
                world = worlds[kind] = WORLDS[kind](factory, quick=quick)
                await asyncio.wait_for(world.setup(), round_timeout)
            outcome = await asyncio.wait_for(world.kill_round(rng), round_timeout)
        except Exception as exc:  # an assertion, a timeout, a daemon that does not start: a violation
            report.kills += 1
            report.kinds[kind] = report.kinds.get(kind, 0) + 1
            report.failures.append(f"kill {n} ({kind}): {exc!r}")
            out(f"{n:3} {kind:7} FAIL {report.failures[-1][:600]}")
            if world is not None:
                world.reset()  # start that kind over on a fresh config dir so one failure does not cascade
            worlds.pop(kind, None)
            continue
        report.kills += 1
        report.recovered += 1
        report.stray_tmp += outcome.stray_tmp
        report.kinds[kind] = report.kinds.get(kind, 0) + 1
        out(f"{n:3} {kind:7} ok   {outcome.detail} ({time.monotonic() - round_started:.1f} s)")
    report.elapsed = time.monotonic() - started
    return report


async def _main(args: argparse.Namespace) -> int:
    if args.database_url:
        os.environ[db_backend.ENV_VAR] = args.database_url  # the harness gives each config dir its own database
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"kill kit: {args.kills} kills, seed {seed}, backend {db_backend.backend()}, "
          f"time limit {args.time_limit:g} s", flush=True)  # fmt: skip
    factory = DaemonFactory()
    try:
        report = await run_kit(
            factory,
            kills=args.kills,
            seed=seed,
            time_limit=args.time_limit,
            round_timeout=args.round_timeout,
            out=lambda line: print(line, flush=True),
        )
    finally:
        factory.close()
    for failure in report.failures:
        print(f"  FAIL {failure}")
    print(f"  kinds: {report.kinds}")
    print(report.summary(), flush=True)
    return 1 if report.violations or report.kills < args.kills else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs to deliver (default 30)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: the clock)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="start no kill after this many seconds")
    parser.add_argument("--round-timeout", type=float, default=40.0, help="a kill round taking longer fails")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server URL whose role may create databases")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
