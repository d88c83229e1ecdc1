"""Exhaustion kit (issue 16, SPEC §5 R-LIM, §8 R-FILE-3/4): each resource run out on a real daemon; each case must
give a clear error, lose nothing, and leave the daemon answering.

    python benchmarks/exhaustion.py                  # the four cases, about 20 s
    python benchmarks/exhaustion.py --only fds       # one case: fds | connections | uploads | disk

Cases (each on a fresh daemon started by the e2e harness):

* **fds** — file descriptors. Once the daemon is ready, its `RLIMIT_NOFILE` soft limit is lowered to the
  descriptors it has open plus `--fd-headroom` (`prlimit(2)` on its pid: no privilege needed for one's own
  processes). Clients connect and `initialize` until the daemon cannot accept any more. Checks: a refused peer
  is closed (EOF) or left waiting, never answered wrongly; with peers still knocking and one left in the listen
  backlog, the daemon's CPU time (utime + stime from /proc/<pid>/stat) over `--cpu-window` seconds stays under
  10 % of a CPU (no accept loop spinning); it stays alive; every connection accepted before the limit still
  answers `status` and `session/list`, and a scripted turn on one of them completes; after 10 clients
  disconnect, a new client is served within 5 s; SIGTERM then stops it cleanly (exit 0).
* **connections** — `[limits] max_connections = 8` (local + WebSocket together): 7 socket peers and 1 WebSocket
  peer fill it; the next socket peer gets exactly one frame, `-32005` with `id: null`, `data.name =
  "connections"`, `data.limit = 8`, then EOF; the next WebSocket peer gets the same frame, then close 1013; the 8
  peers keep working (`status.connections` = 8); once one leaves, a new peer is served.
* **uploads** — `upload_budget_bytes = 3000000`, `max_uploads_per_connection = 2`: a third `file/upload/begin` on
  one connection → `-32005` `uploads_per_connection` (`data.limit` 2); a `begin` on another connection that does
  not fit → `-32005` `upload_budget` (`data.limit` 3000000); after one upload is committed (its file is in the
  workspace with its SHA-256) and its connection closes (R-FILE-3 discards the other), the budget is free again:
  two 1 MB `begin`s fit and one more commits.
* **disk** — the staging directory's disk full. A real full disk needs a small filesystem, and making one (a
  tmpfs or loop mount) needs root; the daemon has no fault switch for its staging files (`ZEROCLAW_FAULTS` and
  `ZEROCLAW_STORAGE_FAULT_FILE` cover the database only). The honest unprivileged substitute is `RLIMIT_FSIZE` on
  the daemon (`prlimit(2)`): a write past the limit fails in `pwrite` exactly where ENOSPC would (EFBIG instead,
  Python ignores SIGXFSZ), through the same `OSError` path of `FileStaging.write` and of the commit's copy.
  With the limit at 4 MiB: an 8,000,000-byte upload's chunk at offset 4 MiB → `-32603` (no bytes or names in the
  message), the upload unchanged (`received_bytes` still 4 MiB); the daemon answers and runs a turn; the limit
  is lifted ("space freed") and the same chunk is accepted; with the limit lowered again the commit → `-32603`
  and leaves no partial file in the workspace's `uploads/`, the upload still staged; lifted again, the commit
  stores the file (size and SHA-256 checked) and `<data_dir>/staging` holds no file.

One line per case, then an overall line; exit status 1 on any failure:

    exhaustion fds: OK accepted=… refused=… (eof) cpu_at_limit=…% alive=yes resumed_in=…s …
    exhaustion: OK 4/4 cases elapsed=…s
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import os
import resource
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

BENCH: Final = Path(__file__).resolve().parent
for _dir in (str(BENCH), str(BENCH.parent / "tests"), str(BENCH.parent / "tests" / "e2e")):
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from e2e_harness import READY_RE, Daemon, DaemonFactory  # noqa: E402
from rlimits import raise_nofile  # noqa: E402
from soak import CallFailed, NdjsonClient, WsClient, cpu_secs, open_socket  # noqa: E402

__all__ = ["CASES", "CaseResult", "main", "run_case"]

MIB: Final = 1024 * 1024
USER: Final = "exhaust"
ADMIN: Final = f"""
[permission_profiles.exhaustadmin]
admin = true

[users.{USER}]
permission_profiles = ["exhaustadmin"]
"""
TIMEOUT: Final = 5.0


@dataclass
class CaseResult:
    name: str
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    elapsed: float = 0.0

    def check(self, what: str, ok: bool, detail: Any = "") -> bool:
        self.checks.append((what, bool(ok), str(detail)[:400]))
        return bool(ok)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(ok for _, ok, _ in self.checks)

    def summary(self) -> str:
        failed = [what for what, ok, _ in self.checks if not ok]
        facts = " ".join(f"{k}={v}" for k, v in self.facts.items())
        text = f"exhaustion {self.name}: {'OK' if self.ok else 'FAILED'} checks={len(self.checks)} {facts}"
        if failed:
            text += " failed=[" + "; ".join(failed) + "]"
        return f"{text} elapsed={self.elapsed:.1f}s"

    def details(self) -> list[str]:
        return [f"  {'ok  ' if ok else 'FAIL'} {what}" + (f": {d}" if d else "") for what, ok, d in self.checks]


def error_parts(frame: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    err = frame.get("error") or {}
    return err.get("code"), err.get("data") or {}


async def until(predicate: Callable[[], Awaitable[bool]], timeout: float, step: float = 0.05) -> float | None:
    """Seconds until `predicate()` held, or None after `timeout`."""
    start = time.perf_counter()
    while True:
        with contextlib.suppress(CallFailed, OSError, AssertionError):
            if await predicate():
                return time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            return None
        await asyncio.sleep(step)


async def served(path: str) -> bool:
    c = await open_socket(path, 2.0)
    try:
        result, _ = await c.call("status", {}, 2.0)
        return "connections" in result
    finally:
        c.close()


def nofile(pid: int) -> tuple[int, int]:
    return resource.prlimit(pid, resource.RLIMIT_NOFILE)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ------------------------------------------------------------------------------------------------ fds


async def case_fds(factory: DaemonFactory, r: CaseResult, *, headroom: int = 24, cpu_window: float = 2.0) -> None:
    d = factory.start("[limits]\nmax_connections = 4096\n", args=["--log-level", "warning"])
    path = str(d.socket_path)
    keep = await open_socket(path, TIMEOUT)  # opened before the limit: must keep working throughout
    sid = (await keep.call("session/new", {}, TIMEOUT))[0]["sessionId"]
    idle0 = cpu_secs(d.pid)
    await asyncio.sleep(cpu_window)
    idle_cpu = (cpu_secs(d.pid) - idle0) / cpu_window
    before = open_fds(d.pid)
    soft, hard = nofile(d.pid)
    limit = before + headroom
    resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (limit, hard))
    r.facts["nofile"] = f"{limit}(open={before})"

    clients: list[NdjsonClient] = []
    refusals: list[str] = []
    for _ in range(headroom + 40):
        try:
            clients.append(await open_socket(path, 3.0))
        except CallFailed as exc:
            refusals.append(exc.kind)
            if len(refusals) >= 5:
                break
    r.facts["accepted"] = str(len(clients))
    r.facts["refused"] = f"{len(refusals)}({','.join(sorted(set(refusals)))})"
    r.check("the limit was reached (a connection was refused)", refusals, f"accepted {len(clients)}")
    r.check("a refused peer is closed or left waiting, never answered", set(refusals) <= {"dropped", "timeout"})
    r.check("the daemon is alive at the limit", d.is_running(), d.describe()[-600:])

    # at the limit, with peers still knocking and one left in the listen backlog: no spinning
    pending = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pending.setblocking(False)
    with contextlib.suppress(BlockingIOError, OSError):
        pending.connect(path)
    stop = asyncio.Event()

    async def knock() -> None:
        while not stop.is_set():
            with contextlib.suppress(CallFailed):
                c = await open_socket(path, 0.5)
                clients.append(c)  # a slot came free: keep it, so the daemon stays at the limit
            await asyncio.sleep(0.1)

    knocker = asyncio.create_task(knock())
    await asyncio.sleep(0.2)
    cpu0 = cpu_secs(d.pid)
    await asyncio.sleep(cpu_window)
    at_limit = (cpu_secs(d.pid) - cpu0) / cpu_window
    stop.set()
    await knocker
    pending.close()
    r.facts["cpu_idle"] = f"{idle_cpu:.1%}"
    r.facts["cpu_at_limit"] = f"{at_limit:.1%}"
    r.check("CPU at the limit < 10 % of a CPU (no accept spin)", at_limit < 0.10, f"{at_limit:.1%}")
    r.check("the daemon is alive after the window", d.is_running(), d.describe()[-600:])

    # nothing lost: every accepted connection still answers. `status` needs no descriptor; a call that needs a
    # new database handle may get a clear -32603 storage_unavailable at the limit (never silence or a hang)
    statuses, lists, storage_errors, other = 0, 0, 0, []
    for c in [keep, *clients]:
        for method in ("status", "session/list"):
            try:
                frame, _ = await c.request(method, {}, TIMEOUT)
            except CallFailed as exc:
                other.append(f"{method}: {exc}")
                continue
            if "result" in frame:
                statuses += method == "status"
                lists += method == "session/list"
            elif clear_storage_error(frame):
                storage_errors += 1
            else:
                other.append(f"{method}: {frame}")
    n = len(clients) + 1
    r.facts["at_limit"] = f"status={statuses}/{n},session/list={lists}/{n},storage_unavailable={storage_errors}"
    r.check(f"all {n} accepted connections answer status at the limit", statuses == n, other[:3])
    r.check(
        "every other call is answered: a result or -32603 storage_unavailable/resources_exhausted", not other, other[:3]
    )
    turn, _ = await keep.request("session/prompt", {"sessionId": sid, "prompt": "at the limit"}, TIMEOUT)
    r.facts["turn_at_limit"] = (
        "ok" if "result" in turn else f"{error_parts(turn)[0]}/{error_parts(turn)[1].get('reason')}"
    )
    r.check(
        "a turn at the limit: a result or -32603 storage_unavailable/resources_exhausted",
        "result" in turn or clear_storage_error(turn),
        turn,
    )

    # descriptors free up: service resumes
    for c in clients[:10]:
        c.close()
    resumed = await until(lambda: served(path), 5.0)
    r.facts["resumed_in"] = "never" if resumed is None else f"{resumed:.2f}s"
    r.check("a new client is served once descriptors free up", resumed is not None)
    cpu0 = cpu_secs(d.pid)
    await asyncio.sleep(1.0)
    r.facts["cpu_after"] = f"{cpu_secs(d.pid) - cpu0:.1%}"
    failed = []
    for c in [keep, *clients[10:]]:
        try:
            await c.call("status", {}, TIMEOUT)
            await c.call("session/list", {}, TIMEOUT)
        except CallFailed as exc:
            failed.append(str(exc))
    r.check("after they free up, every connection from before answers session/list", not failed, failed[:3])
    try:
        result, _ = await keep.call("session/prompt", {"sessionId": sid, "prompt": "after the limit"}, TIMEOUT)
        r.check("...and the same session runs a turn", result.get("content") == "You said: «after the limit»", result)
    except CallFailed as exc:
        r.check("...and the same session runs a turn", False, exc)
    for c in [keep, *clients[10:]]:
        c.close()
    resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (soft, hard))
    errors = [x for x in d.stderr_lines if "Traceback" in x or "error" in x.lower()]
    r.facts["daemon_error_lines"] = str(len(errors))
    r.check("daemon log lines about errors (for the record)", True, errors[:4])
    rc = d.stop(signal.SIGTERM, 10)
    r.check("SIGTERM stops it cleanly (exit 0)", rc == 0, f"rc={rc}")


def clear_storage_error(frame: dict[str, Any]) -> bool:
    """`-32603` naming the condition: the database cannot be reached, or the daemon is out of descriptors."""
    code, data = error_parts(frame)
    kinds = ("storage_unavailable", "resources_exhausted")
    return code == -32603 and data.get("kind") in kinds and bool(data.get("reason"))


async def ok_call(c: NdjsonClient) -> bool:
    result, _ = await c.call("status", {}, 2.0)
    return "connections" in result


# ------------------------------------------------------------------------------------------------ connections


async def pair(d: Daemon) -> str:
    c = await open_socket(str(d.socket_path), TIMEOUT)
    try:
        token: str = (await c.call("pairing/create", {"user": USER}, TIMEOUT))[0]["token"]
    finally:
        c.close()
    return token


async def read_until_eof(c: RawClient, timeout: float) -> list[dict[str, Any]]:
    """Frames a refused peer got before EOF (collected raw: NdjsonClient keeps only answers to its calls)."""
    frames: list[dict[str, Any]] = []
    assert c.transport is not None
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(c.closed), timeout)
    for line in c.raw_lines:
        frames.append(orjson.loads(line))
    return frames


class RawClient(NdjsonClient):
    """Keeps every line (for peers that are refused before any call)."""

    def __init__(self) -> None:
        super().__init__()
        self.raw_lines: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        self.raw_lines += [x for x in (self.buf + data).split(b"\n")[:-1] if x.strip()]
        super().data_received(data)


async def case_connections(factory: DaemonFactory, r: CaseResult, *, cap: int = 8) -> None:
    d = factory.start(f"[limits]\nmax_connections = {cap}\n{ADMIN}", no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None
    url = "ws" + m["gateway"].removeprefix("http") + "/rpc"
    path = str(d.socket_path)
    token = await pair(d)
    r.check("the pairing connection has left", await until(lambda: count_is(path, 1), 5.0) is not None)
    socks = [await open_socket(path, TIMEOUT) for _ in range(cap - 1)]
    ws = await WsClient.open(url, token, TIMEOUT)

    loop = asyncio.get_running_loop()
    _, extra = await loop.create_unix_connection(RawClient, path)
    frames = await read_until_eof(extra, TIMEOUT)
    r.check("the next socket peer is closed", extra.closed.done())
    r.check("it got exactly one frame", len(frames) == 1, frames)
    if frames:
        code, data = error_parts(frames[0])
        r.check(
            "-32005, id null, data.name connections, data.limit",
            code == -32005
            and frames[0].get("id", "x") is None
            and data.get("name") == "connections"
            and data.get("limit") == cap,
            frames[0],
        )
    extra.close()

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    refused_ws = await connect(url, proxy=None, compression=None, open_timeout=TIMEOUT)
    texts: list[str] = []
    try:
        while True:
            texts.append(str(await asyncio.wait_for(refused_ws.recv(), TIMEOUT)))
    except (ConnectionClosed, TimeoutError):
        pass
    close_code = refused_ws.close_code
    await refused_ws.close()
    ws_frames = [orjson.loads(t) for t in texts]
    r.check(
        "the next WebSocket peer gets the same one frame, then close 1013",
        len(ws_frames) == 1
        and error_parts(ws_frames[0])[0] == -32005
        and error_parts(ws_frames[0])[1].get("name") == "connections"
        and close_code == 1013,
        f"frames={ws_frames} close={close_code}",
    )

    counts = []
    for c in socks:
        counts.append((await c.call("status", {}, TIMEOUT))[0]["connections"])
    counts.append((await ws.call("status", {}, TIMEOUT))[0]["connections"])
    r.check(f"the {cap} peers keep working (status.connections = {cap})", set(counts) == {cap}, counts)
    socks.pop().close()
    resumed = await until(lambda: served(path), 5.0)
    r.facts["refused_frame"] = "-32005/connections"
    r.facts["resumed_in"] = "never" if resumed is None else f"{resumed:.2f}s"
    r.check("once one leaves, a new peer is served", resumed is not None)
    for c in socks:
        c.close()
    await ws.close()


async def count_is(path: str, n: int) -> bool:
    c = await open_socket(path, 2.0)
    try:
        return bool((await c.call("status", {}, 2.0))[0]["connections"] == n)
    finally:
        c.close()


# ------------------------------------------------------------------------------------------------ uploads


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def upload_all(c: NdjsonClient, upload_id: str, data: bytes) -> dict[str, Any]:
    for offset in range(0, len(data), MIB):
        await c.call(
            "file/upload/chunk",
            {"upload_id": upload_id, "offset": offset, "data_b64": b64(data[offset : offset + MIB])},
            30,
        )
    entry, _ = await c.call("file/upload/commit", {"upload_id": upload_id}, 30)
    return dict(entry)


def check_stored(r: CaseResult, entry: dict[str, Any], data: bytes, what: str) -> None:
    digest = hashlib.sha256(data).hexdigest()
    stored = Path(entry["workspace_path"])
    ok = (
        stored.is_file()
        and stored.stat().st_size == len(data)
        and hashlib.sha256(stored.read_bytes()).hexdigest() == digest
    )
    r.check(f"{what}: stored with its size and SHA-256", ok and entry["ref_id"] == f"sha256:{digest}", entry)


async def begin(c: NdjsonClient, sid: str, size: int, **extra: Any) -> dict[str, Any]:
    frame, _ = await c.request("file/upload/begin", {"session_id": sid, "size_bytes": size, **extra}, TIMEOUT)
    return frame


async def case_uploads(factory: DaemonFactory, r: CaseResult) -> None:
    budget, per_conn, size = 3_000_000, 2, 1_000_000
    d = factory.start(f"[limits]\nupload_budget_bytes = {budget}\nmax_uploads_per_connection = {per_conn}\n")
    path = str(d.socket_path)
    a = await open_socket(path, TIMEOUT)
    b = await open_socket(path, TIMEOUT)
    sid = (await a.call("session/new", {}, TIMEOUT))[0]["sessionId"]
    f1 = await begin(a, sid, size, filename="one.bin")
    f2 = await begin(a, sid, size, filename="two.bin")
    r.check("two begins on one connection fit", "result" in f1 and "result" in f2, [f1, f2])
    third = await begin(a, sid, 10, filename="three.bin")
    code, data = error_parts(third)
    r.check(
        "a third begin on that connection: -32005 uploads_per_connection, data.limit",
        code == -32005 and data.get("name") == "uploads_per_connection" and data.get("limit") == per_conn,
        third,
    )
    over = await begin(b, sid, size, filename="over.bin")
    code, data = error_parts(over)
    r.check(
        "a begin past the budget on another connection: -32005 upload_budget, data.limit",
        code == -32005 and data.get("name") == "upload_budget" and data.get("limit") == budget,
        over,
    )
    r.check("the daemon answers at the full budget", await ok_call(b))
    payload = os.urandom(size)
    entry = await upload_all(a, f1["result"]["upload_id"], payload)
    check_stored(r, entry, payload, "the first upload, committed at the full budget")
    again = await begin(b, sid, size, filename="again.bin")
    r.check("after the commit its share of the budget is free", "result" in again, again)
    still = await begin(b, sid, size, filename="still.bin")
    r.check("...and no more than that", error_parts(still)[1].get("name") == "upload_budget", still)
    a.close()  # R-FILE-3: its other upload is discarded, and its charge released

    async def fits() -> bool:
        frame = await begin(b, sid, size, filename="later.bin")
        if "result" in frame:
            fits.upload_id = frame["result"]["upload_id"]  # type: ignore[attr-defined]
            return True
        return False

    freed = await until(fits, 5.0)
    r.facts["freed_after_close"] = "never" if freed is None else f"{freed:.2f}s"
    r.check("after the connection closed its upload's budget is free", freed is not None)
    payload2 = os.urandom(size)
    entry2 = await upload_all(b, again["result"]["upload_id"], payload2)
    check_stored(r, entry2, payload2, "an upload begun after the budget freed")
    staging = d.data_dir / "staging"
    r.check("no named file in the staging directory", not any(staging.iterdir()), list(staging.iterdir()))
    r.facts["errors"] = "-32005/uploads_per_connection,-32005/upload_budget"
    b.close()


# ------------------------------------------------------------------------------------------------ disk


async def case_disk(factory: DaemonFactory, r: CaseResult, *, fsize: int = 4 * MIB) -> None:
    size = 8_000_000
    d = factory.start(args=["--log-level", "warning"])
    path = str(d.socket_path)
    c = await open_socket(path, TIMEOUT)
    sid = (await c.call("session/new", {}, TIMEOUT))[0]["sessionId"]
    biggest = max((p.stat().st_size for p in d.data_dir.rglob("*") if p.is_file()), default=0)
    r.check("the daemon's own files are far below the file-size limit", biggest < fsize // 2, biggest)
    payload = os.urandom(size)
    digest = hashlib.sha256(payload).hexdigest()
    frame = await begin(c, sid, size, filename="big.bin", sha256=digest)
    upload_id = frame["result"]["upload_id"]
    soft, hard = resource.prlimit(d.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(d.pid, resource.RLIMIT_FSIZE, (fsize, hard))
    r.facts["substitute"] = f"RLIMIT_FSIZE={fsize // MIB}MiB"

    async def chunk(offset: int) -> dict[str, Any]:
        params = {"upload_id": upload_id, "offset": offset, "data_b64": b64(payload[offset : offset + MIB])}
        answer, _ = await c.request("file/upload/chunk", params, 30)
        return answer

    for offset in range(0, fsize, MIB):
        ok = await chunk(offset)
        if "result" not in ok:
            r.check(f"chunks below the limit are accepted (offset {offset})", False, ok)
            return
    full = await chunk(fsize)
    code, data = error_parts(full)
    message = str((full.get("error") or {}).get("message"))
    r.facts["full_chunk"] = f"{code}/{data.get('kind')}"
    r.check("the chunk past the full disk: -32603", code == -32603, full)
    r.check(
        "its message names no file and carries no bytes", "big.bin" not in str(full) and len(str(full)) < 400, message
    )
    retry = await chunk(fsize)
    r.check("still full: the same answer", error_parts(retry)[0] == -32603, retry)
    wrong = await chunk(fsize + MIB)
    r.check(
        "the upload is unchanged (received_bytes = the bytes before the full disk)",
        error_parts(wrong)[1].get("errors", [{}])[0].get("received_bytes") == fsize or "offset_gap" in str(wrong),
        wrong,
    )
    result, _ = await c.call("session/prompt", {"sessionId": sid, "prompt": "disk full"}, TIMEOUT)
    r.check(
        "the daemon answers and runs a turn while staging is full", result.get("content") == "You said: «disk full»"
    )
    resource.prlimit(d.pid, resource.RLIMIT_FSIZE, (soft, hard))  # space freed
    for offset in range(fsize, size, MIB):
        ok = await chunk(offset)
        if "result" not in ok:
            r.check(f"after space is freed the chunks are accepted (offset {offset})", False, ok)
            return
    r.check("after space is freed the same chunk and the rest are accepted", ok["result"]["received_bytes"] == size, ok)

    resource.prlimit(d.pid, resource.RLIMIT_FSIZE, (fsize, hard))  # full again, for the commit's copy
    failed, _ = await c.request("file/upload/commit", {"upload_id": upload_id}, 30)
    r.facts["full_commit"] = f"{error_parts(failed)[0]}/{error_parts(failed)[1].get('kind')}"
    r.check("a commit on a full disk: -32603", error_parts(failed)[0] == -32603, failed)
    workspace_uploads = [p for p in d.root.rglob("uploads") if p.is_dir()]
    leftovers = [p.name for u in workspace_uploads for p in u.iterdir()]
    r.check("...leaving no partial file in the workspace", not leftovers, leftovers)
    resource.prlimit(d.pid, resource.RLIMIT_FSIZE, (soft, hard))
    entry, _ = await c.call("file/upload/commit", {"upload_id": upload_id}, 30)
    check_stored(r, dict(entry), payload, "the upload, committed once space is free (still staged after the failure)")
    staging = d.data_dir / "staging"
    r.check("no named file in the staging directory", not any(staging.iterdir()), list(staging.iterdir()))
    r.check("the daemon is alive and answering", d.is_running() and await ok_call(c))
    c.close()


CASES: Final[dict[str, Callable[[DaemonFactory, CaseResult], Awaitable[None]]]] = {
    "fds": case_fds,
    "connections": case_connections,
    "uploads": case_uploads,
    "disk": case_disk,
}


async def run_case(name: str, factory: DaemonFactory, timeout: float = 60.0) -> CaseResult:
    r = CaseResult(name)
    started = time.perf_counter()
    try:
        await asyncio.wait_for(CASES[name](factory, r), timeout)
    except TimeoutError:
        r.check(f"the case finished within {timeout:g} s", False)
    except (CallFailed, OSError, AssertionError, KeyError, TypeError) as exc:
        r.check("the case ran to its end", False, f"{type(exc).__name__}: {exc}")
    r.elapsed = time.perf_counter() - started
    return r


async def _main(args: argparse.Namespace) -> int:
    raise_nofile()
    names = [args.only] if args.only else list(CASES)
    started = time.perf_counter()
    results = []
    for name in names:
        factory = DaemonFactory()
        try:
            result = await run_case(name, factory)
        finally:
            factory.close()
        results.append(result)
        if args.verbose or not result.ok:
            print("\n".join(result.details()), flush=True)
        print(result.summary(), flush=True)
    passed = sum(r.ok for r in results)
    ok = passed == len(results)
    elapsed = time.perf_counter() - started
    print(f"exhaustion: {'OK' if ok else 'FAILED'} {passed}/{len(results)} cases elapsed={elapsed:.1f}s", flush=True)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", choices=list(CASES), help="run one case")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every check")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
