"""Soak kit (issue 16, SPEC §5 R-LIM): many well-behaved clients, churn, running turns and slow readers against one
real daemon for a bounded time, with an idle baseline of the same calls first.

    python benchmarks/soak.py                               # 60 s, 1,000 socket + 100 WebSocket clients
    python benchmarks/soak.py --duration 5 --clients 100 --ws-clients 10 --slow-readers 1   # the e2e test's shape

The daemon is started by the e2e harness (temp config dir, gateway on a free port, `--log-level warning`) with
`[limits] outbound_stall_secs = 2`, `max_outbound_buffer_bytes = 1 MiB`, `max_connections = 4096` and
`max_sessions = 4096`; the WebSocket clients authenticate with a token paired for an admin user, as fuzz.py does.

Phases, all on that one daemon:

1. **Baseline**: a few clients (10 socket + 1 WebSocket: the soak's 10:1 mix) call `status` and `session/list`
   in turn for `--baseline-secs`, at the same total rate as the soak's steady clients (each calls every
   `interval * few / many` s). No churn, no turns, no slow readers. Its p99 is the yardstick.
2. **Ramp**: `--clients` Unix-socket and `--ws-clients` WebSocket clients connect and `initialize` (in batches, the
   listen backlog is 1024); VmRSS before and after gives the per-connection cost.
3. **Soak** for `--duration`: every steady client calls `status` or `session/list` (alternating) at random
   intervals around `--interval` s; `--churners` loops connect, `initialize`, call `status` and disconnect, over and
   over (a quarter of them over WebSocket); `--turners` socket clients each run scripted turns on their own
   session (`/stream 2000` or plain text, read to the end and checked); and every `duration / slow-readers` s a
   slow reader (every fourth one a WebSocket peer) starts `session/prompt "/stream 200000"`, reads the stream at
   full speed until 256 KiB arrived, then stops reading for good.

Checks:
* **errors** on well-behaved clients (steady, churn, turns): an error answer, a wrong answer, no answer within
  `--timeout`, a refused connect or a dropped connection. Target 0.
* **p99** of the steady clients' calls during the soak against the baseline's. Target ≤ 1.5x.
* **slow readers**: each must be cut off (a Unix peer: its socket reports the daemon's close, POLLRDHUP, though
  its receive queue is unread; a WebSocket peer: the daemon's stall warning naming its port) within
  `outbound_stall_secs + --cut-slack` (1 s: filling the buffer past the mark and a loaded 2-CPU machine) of its
  last read, and never before `outbound_stall_secs` (that would cut a reader that had not stalled for long enough).
* **RSS**: VmHWM (peak) ≤ the bound `rss_connected + slow * (max_outbound_buffer_bytes + 64 KiB) + 32 MiB`, where
  `rss_connected` is VmRSS once every client is connected (it includes the per-connection cost * connections),
  `slow` the most slow readers stalled at once (each may hold the limit plus one batch of a turn's updates,
  docs/limits.md), and 32 MiB the working set of turns, sessions and allocator slack; and growth from
  `rss_connected` to the end of the soak (clients still connected) ≤ 32 MiB (no growth with time).

One summary line, exit status 1 if a target is missed:

    soak: duration=60.0s clients=1000+100ws calls=… errors=0 p99=…ms baseline_p99=…ms ratio=…x (≤1.5) …

The kit's own process shares the 2 CPUs with the daemon: the summary quotes both processes' CPU use, and the
latencies are measured in the kit (send to answer, in the protocol callback), so they include the kit's own
scheduling. So a **probe** (`benchmarks/soak_probe.py`, `--probe-rate` calls a second, 0 for none and no floor), a
light client in a process of its own, makes the same calls during the baseline and the soak; its p99s and their
ratio are on the summary line too (`probe p99=… baseline_p99=… ratio=…`), for the daemon's share of the tail. A
second probe calls the **floor** (`benchmarks/floor_server.py`, `run.py`'s floor), a server in a process of its own
that does nothing but answer, at the same time: its ratio (`floor p99=… baseline_p99=… ratio=…`) is what the
machine's load alone (the daemon and the kit on its CPUs) does to a call's tail, with no daemon in the path. The
target stays the steady clients' ratio. Compare ratios of one run, not numbers across runs.
The line ends with the hypervisor's **steal** in each phase (`steal baseline=…% soak=…%`, from `/proc/stat`): this
machine is a VM on a shared host, and a phase with more steal than the other ran on a slower machine.

`--pin` puts the kit (every thread) on the first CPU it may use and the daemon (every thread), the probes and the
floor on the others, so the two processes stop taking each other's CPU; the summary line then says so (`pin=…`).
It attributes the tail (the kernel's placement or the daemon's own work); the target is read off a run without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import os
import random
import select
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
for _dir in (str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "e2e")):  # the harness and tests/db_backend.py
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from e2e_harness import READY_RE, Daemon, DaemonFactory  # noqa: E402
from rlimits import raise_nofile  # noqa: E402

__all__ = ["SoakResult", "main", "run_soak"]

MIB: Final = 1024 * 1024
USER: Final = "soak"
STALL_WARNING: Final = "its queued output stayed above max_outbound_buffer_bytes"
SLOW_READ_BYTES: Final = 256 * 1024  # a slow reader reads this much of its stream, then stops
SLOW_STREAM: Final = 200_000
PROBE: Final = Path(__file__).with_name("soak_probe.py")
PROBE_RATE: Final = 50.0  # the probe's calls a second (benchmarks/soak_probe.py)
FLOOR: Final = Path(__file__).with_name("floor_server.py")  # benchmarks/run.py's floor too
TURN_STREAM: Final = 2000
BATCH_SLACK: Final = 64 * 1024  # one batch of a turn's updates (256 chunks) beyond the limit, rounded up
RSS_SLACK: Final = 32 * MIB
# How early a cut may look: a socket reader's last read and its close are stamped by polling (50 ms); a WebSocket
# client library reads frames ahead of the application, so the last read it reports is later than the daemon's.
EARLY_SLACK_WS: Final = 0.5


def config(stall: float, outbound: int) -> str:
    return f"""\
[limits]
outbound_stall_secs = {stall}
max_outbound_buffer_bytes = {outbound}
max_connections = 4096
max_sessions = 4096

[permission_profiles.soakadmin]
admin = true

[users.{USER}]
permission_profiles = ["soakadmin"]
"""


@dataclass(frozen=True)
class Pinning:
    """`--pin`: this kit on the first CPU it may use; the daemon (every thread), the probes and the floor on the
    others."""

    kit: frozenset[int]
    daemon: frozenset[int]

    @classmethod
    def split(cls) -> Pinning:
        if not hasattr(os, "sched_setaffinity"):
            raise SystemExit("--pin needs CPU affinity (Linux)")
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--pin needs two CPUs or more")
        return cls(frozenset(cpus[:1]), frozenset(cpus[1:]))

    def text(self) -> str:
        return f"pin=kit:{_cpus(self.kit)},daemon+probe:{_cpus(self.daemon)} "


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


def pin_process(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of `pid` on `cpus`; threads it starts later inherit the mask of the thread that starts them."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


async def probe_during(run: Run, socket_path: str | None, rate: float, secs: float, name: str = "probe") -> list[float]:
    """Latencies of the probe, a light client in its own process, over `secs` (none when `rate` is 0 or there is
    no socket): the same calls as the steady clients', timed away from this busy process, so the share of the tail
    of the server at `socket_path` (the daemon, or the floor: `name`, for its errors) shows."""
    if rate <= 0 or socket_path is None:
        return []
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROBE),
        socket_path,
        str(rate),
        str(secs),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    if run.pinning is not None:
        pin_process(proc.pid, run.pinning.daemon)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        run.stats.error(name, err.decode(errors="replace").strip()[-300:] or f"exit {proc.returncode}")
        return []
    latencies: list[float] = orjson.loads(out)
    return latencies


@contextlib.asynccontextmanager
async def floor_server(pinning: Pinning | None) -> AsyncIterator[str]:
    """`benchmarks/floor_server.py` on a socket of its own, for as long as the block runs; yields the socket's
    path. Pinned with the daemon under `--pin`: the floor stands where the daemon stands."""
    with tempfile.TemporaryDirectory(prefix="zc-soak-floor-") as tmp:
        path = str(Path(tmp) / "floor.sock")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(FLOOR), path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        try:
            assert proc.stderr is not None
            ready = await asyncio.wait_for(proc.stderr.readline(), 30)
            if ready.strip() != b"ready":
                raise RuntimeError(f"the floor server did not start (exit {proc.returncode})")
            if pinning is not None:
                pin_process(proc.pid, pinning.daemon)
            yield path
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def settle_gc() -> None:
    """Collect, then freeze what lives on (this kit's clients): the kit's own collector would otherwise scan its
    1,100 connections again and again, and its pauses would be counted as the daemon's latency."""
    gc.collect()
    gc.freeze()


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_jiffies() -> tuple[int, int]:
    """(steal, total) CPU time of the whole machine so far (`/proc/stat`). Steal is time the hypervisor gave this
    VM's CPUs to someone else: a run's tail grows with it, whatever the daemon does."""
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return steal, user + nice + system + idle + iowait + irq + softirq + steal


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------------------------------------ stats


@dataclass
class Stats:
    calls: int = 0
    errors: int = 0
    details: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)  # "sock status" -> seconds
    churn_cycles: int = 0
    turns: int = 0
    recording: bool = True

    def error(self, kind: str, text: str) -> None:
        self.errors += 1
        self.kinds[kind] += 1
        if len(self.details) < 50:
            self.details.append(f"{kind}: {text}")

    def latency(self, key: str, seconds: float) -> None:
        self.calls += 1
        if self.recording:
            self.latencies.setdefault(key, []).append(seconds)

    def all_latencies(self) -> list[float]:
        return [x for values in self.latencies.values() for x in values]


class CallFailed(Exception):
    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


# ------------------------------------------------------------------------------------------------ socket client


class NdjsonClient(asyncio.Protocol):
    """A lean NDJSON client: answers resolve futures in `data_received` (the receive time is taken there, so the
    latency excludes task scheduling after it); notifications are counted and kept only when asked."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.pending: dict[int, asyncio.Future[tuple[dict[str, Any], float]]] = {}
        self.ids = itertools.count(1)
        self.closed = asyncio.get_running_loop().create_future()
        self.notifications = 0
        self.bytes_read = 0
        self.last_read = 0.0
        self.read_limit: int | None = None  # pause reading for good once this many bytes arrived
        self.limit_reached = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.last_read = now
        self.bytes_read += len(data)
        if self.read_limit is not None and self.bytes_read >= self.read_limit:
            assert self.transport is not None
            self.transport.pause_reading()  # a slow reader: it never reads again
            if not self.limit_reached.done():
                self.limit_reached.set_result(now)
            return
        buf = self.buf + data if self.buf else data
        *lines, self.buf = buf.split(b"\n")
        for line in lines:
            if b'"id"' not in line:  # a notification (session/update): counted, not parsed
                self.notifications += 1
                continue
            obj = orjson.loads(line)
            fut = self.pending.pop(obj.get("id"), None) if isinstance(obj.get("id"), int) else None
            if fut is not None and not fut.done():
                fut.set_result((obj, now))
            elif "method" in obj and "id" not in obj:
                self.notifications += 1

    def connection_lost(self, exc: Exception | None) -> None:
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(CallFailed("dropped", f"connection lost with a call in flight ({exc!r})"))
        self.pending.clear()
        if not self.closed.done():
            self.closed.set_result(time.perf_counter())

    async def call(self, method: str, params: Any, timeout: float) -> tuple[Any, float]:
        """(result, seconds from the write to the answer's arrival); raises CallFailed."""
        obj, seconds = await self.request(method, params, timeout)
        if "error" in obj:
            raise CallFailed("error", f"{method}: {obj['error']}")
        return obj.get("result"), seconds

    async def request(self, method: str, params: Any, timeout: float) -> tuple[dict[str, Any], float]:
        """(the answer frame, seconds from the write to its arrival); raises CallFailed if none comes."""
        if self.transport is None or self.transport.is_closing():
            raise CallFailed("dropped", f"{method}: the connection is closed")
        rid = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        frame = {"jsonrpc": "2.0", "method": method, "id": rid}
        if params is not None:
            frame["params"] = params
        sent = time.perf_counter()
        self.transport.write(orjson.dumps(frame) + b"\n")
        try:
            obj, got = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            self.pending.pop(rid, None)
            raise CallFailed("timeout", f"{method}: no answer within {timeout:g} s") from None
        return obj, got - sent

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


async def open_socket(path: str, timeout: float) -> NdjsonClient:
    loop = asyncio.get_running_loop()
    try:
        _, client = await asyncio.wait_for(loop.create_unix_connection(NdjsonClient, path), timeout)
    except (OSError, TimeoutError) as exc:
        raise CallFailed("connect", f"cannot connect: {exc!r}") from None
    await client.call("initialize", {"protocolVersion": 1}, timeout)
    return client


# ------------------------------------------------------------------------------------------------ WebSocket client


class WsClient:
    """One WebSocket peer (websockets' asyncio client), one call at a time."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.port = ws.local_address[1]

    @classmethod
    async def open(cls, url: str, token: str, timeout: float, *, rcvbuf: int | None = None) -> WsClient:
        from websockets.asyncio.client import connect

        try:
            ws = await asyncio.wait_for(
                connect(url, proxy=None, max_size=1 << 24, compression=None, max_queue=4, open_timeout=timeout),
                timeout,
            )
        except (OSError, TimeoutError) as exc:
            raise CallFailed("connect", f"cannot connect the WebSocket: {exc!r}") from None
        except Exception as exc:  # websockets' InvalidStatus, InvalidHandshake
            raise CallFailed("connect", f"WebSocket handshake failed: {exc!r}") from None
        if rcvbuf is not None:
            sock = ws.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        client = cls(ws)
        await client.call("initialize", {"protocolVersion": 1, "authToken": token}, timeout)
        return client

    async def call(self, method: str, params: Any, timeout: float) -> tuple[Any, float]:
        from websockets.exceptions import ConnectionClosed

        rid = next(self.ids)
        frame = {"jsonrpc": "2.0", "method": method, "id": rid}
        if params is not None:
            frame["params"] = params
        sent = time.perf_counter()
        try:
            await self.ws.send(orjson.dumps(frame).decode())
            while True:
                text = await asyncio.wait_for(self.ws.recv(), max(0.001, sent + timeout - time.perf_counter()))
                got = time.perf_counter()
                obj = orjson.loads(text)
                if obj.get("id") == rid:
                    break
        except TimeoutError:
            raise CallFailed("timeout", f"ws {method}: no answer within {timeout:g} s") from None
        except ConnectionClosed as exc:
            raise CallFailed("dropped", f"ws {method}: connection closed ({exc!r})") from None
        if "error" in obj:
            raise CallFailed("error", f"ws {method}: {obj['error']}")
        return obj.get("result"), got - sent

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 2)


# ------------------------------------------------------------------------------------------------ the run


@dataclass
class SlowReader:
    surface: str
    started: float
    last_read: float | None = None
    cut: float | None = None
    port: int | None = None
    note: str = ""
    session_id: str | None = None

    @property
    def cut_after(self) -> float | None:
        return None if self.cut is None or self.last_read is None else self.cut - self.last_read


@dataclass
class Run:
    daemon: Daemon
    socket_path: str
    ws_url: str
    token: str
    timeout: float
    stall: float
    stop_at: float = 0.0
    stats: Stats = field(default_factory=Stats)
    slow: list[SlowReader] = field(default_factory=list)
    stall_lines_seen: int = 0
    pinning: Pinning | None = None

    def running(self) -> bool:
        return time.perf_counter() < self.stop_at


async def steady_client(run: Run, client: NdjsonClient | WsClient, interval: float, rng: random.Random) -> None:
    """Call `status` / `session/list` in turn at random intervals (mean `interval`) until the run stops."""
    surface = "ws" if isinstance(client, WsClient) else "sock"
    methods = itertools.cycle(["status", "session/list"] if rng.random() < 0.5 else ["session/list", "status"])
    await asyncio.sleep(rng.uniform(0, interval))
    while run.running():
        method = next(methods)
        try:
            result, seconds = await client.call(method, {}, run.timeout)
        except CallFailed as exc:
            run.stats.error(exc.kind, f"{surface} steady: {exc}")
            return
        if (method == "status" and "connections" not in result) or (
            method == "session/list" and "sessions" not in result
        ):
            run.stats.error("wrong", f"{surface} {method}: {str(result)[:200]}")
        run.stats.latency(f"{surface} {method}", seconds)
        await asyncio.sleep(rng.uniform(0.5, 1.5) * interval)


async def churner(run: Run, websocket: bool, rng: random.Random) -> None:
    """Connect, initialize, one `status`, disconnect; again and again."""
    while run.running():
        try:
            if websocket:
                ws = await WsClient.open(run.ws_url, run.token, run.timeout)
                try:
                    await ws.call("status", {}, run.timeout)
                finally:
                    await ws.close()
            else:
                c = await open_socket(run.socket_path, run.timeout)
                try:
                    await c.call("status", {}, run.timeout)
                finally:
                    c.close()
        except CallFailed as exc:
            run.stats.error(exc.kind, f"{'ws' if websocket else 'sock'} churn: {exc}")
            await asyncio.sleep(0.5)
            continue
        run.stats.churn_cycles += 1
        await asyncio.sleep(rng.uniform(0.0, 0.1))


async def turner(run: Run, rng: random.Random) -> None:
    """Scripted turns on one session, read to the end and checked."""
    try:
        c = await open_socket(run.socket_path, run.timeout)
        sid = (await c.call("session/new", {}, run.timeout))[0]["sessionId"]
    except CallFailed as exc:
        run.stats.error(exc.kind, f"turner set-up: {exc}")
        return
    n = 0
    try:
        while run.running():
            n += 1
            before = c.notifications
            stream = rng.random() < 0.5
            prompt = f"/stream {TURN_STREAM}" if stream else f"hello number {n}"
            try:
                result, _ = await c.call("session/prompt", {"sessionId": sid, "prompt": prompt}, run.timeout * 3)
            except CallFailed as exc:
                run.stats.error(exc.kind, f"turn: {exc}")
                return
            updates = c.notifications - before
            ok = result.get("stopReason") == "end_turn" and (
                updates >= TURN_STREAM + 1 if stream else result.get("content") == f"You said: «{prompt}»"
            )
            if not ok:
                run.stats.error("wrong", f"turn {prompt!r}: {updates} updates, result {str(result)[:200]}")
            run.stats.turns += 1
            await asyncio.sleep(rng.uniform(0.1, 0.5))
    finally:
        c.close()


async def slow_socket_reader(run: Run, reader: SlowReader) -> None:
    c = await open_socket(run.socket_path, run.timeout)
    sid = reader.session_id = (await c.call("session/new", {}, run.timeout))[0]["sessionId"]
    c.read_limit = c.bytes_read + SLOW_READ_BYTES
    assert c.transport is not None
    c.transport.write(
        orjson.dumps(
            {"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": sid, "prompt": "/stream 200000"}}
            | {"id": 999}
        )
        + b"\n"
    )
    reader.last_read = await asyncio.wait_for(c.limit_reached, run.timeout)
    # The daemon's close shows as POLLRDHUP on our socket even though its receive queue is never read.
    sock = c.transport.get_extra_info("socket")
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLRDHUP | select.POLLHUP)
    deadline = time.perf_counter() + run.stall + 15
    while time.perf_counter() < deadline:
        if poller.poll(0):
            reader.cut = time.perf_counter()
            break
        await asyncio.sleep(0.01)
    c.close()


async def slow_ws_reader(run: Run, reader: SlowReader) -> None:
    ws = await WsClient.open(run.ws_url, run.token, run.timeout, rcvbuf=16384)
    reader.port = ws.port
    sid = reader.session_id = (await ws.call("session/new", {}, run.timeout))[0]["sessionId"]
    await ws.ws.send(
        orjson.dumps(
            {"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": sid, "prompt": "/stream 200000"}}
            | {"id": 999}
        ).decode()
    )
    got = 0
    while got < SLOW_READ_BYTES:
        got += len(await asyncio.wait_for(ws.ws.recv(), run.timeout))
    reader.last_read = time.perf_counter()  # the library reads at most max_queue (4) more messages, then stops
    mark = f"closing connection ws:127.0.0.1:{ws.port}"
    deadline = time.perf_counter() + run.stall + 15
    while time.perf_counter() < deadline:
        if any(mark in line and STALL_WARNING in line for line in run.daemon.stderr_lines[-200:]):
            reader.cut = time.perf_counter()
            break
        await asyncio.sleep(0.01)
    ws.ws.transport.abort()


async def slow_reader(run: Run, websocket: bool) -> None:
    reader = SlowReader("ws" if websocket else "sock", time.perf_counter())
    run.slow.append(reader)
    try:
        await (slow_ws_reader if websocket else slow_socket_reader)(run, reader)
    except Exception as exc:  # a failure to set up is reported on the reader, the run goes on
        reader.note = f"{type(exc).__name__}: {exc}"
    if reader.session_id is not None:  # its turn goes on after the cut-off (docs/sessions.md): end it, as a user would
        with contextlib.suppress(CallFailed):
            c = await open_socket(run.socket_path, run.timeout)
            try:
                await c.call("session/kill", {"sessionId": reader.session_id}, run.timeout)
            finally:
                c.close()


async def pair(daemon: Daemon) -> str:
    async with await daemon.client() as c:
        token: str = (await c.call("pairing/create", {"user": USER}))["token"]
    return token


async def open_many(run: Run, n: int, ws: int) -> tuple[list[NdjsonClient], list[WsClient]]:
    socks: list[NdjsonClient] = []
    wss: list[WsClient] = []
    for start in range(0, n, 100):
        socks += await asyncio.gather(
            *(open_socket(run.socket_path, run.timeout * 2) for _ in range(min(100, n - start)))
        )
    for start in range(0, ws, 20):
        wss += await asyncio.gather(
            *(WsClient.open(run.ws_url, run.token, run.timeout * 2) for _ in range(min(20, ws - start)))
        )
    return socks, wss


async def close_many(socks: list[NdjsonClient], wss: list[WsClient]) -> None:
    for c in socks:
        c.close()
    await asyncio.gather(*(w.close() for w in wss))


async def phase(
    run: Run,
    socks: list[NdjsonClient],
    wss: list[WsClient],
    interval: float,
    seconds: float,
    seed: str,
    *,
    churners: int = 0,
    turners: int = 0,
    slow_readers: int = 0,
) -> None:
    run.stop_at = time.perf_counter() + seconds
    tasks = [
        asyncio.create_task(steady_client(run, c, interval, random.Random(f"{seed}/s{i}")))
        for i, c in enumerate([*socks, *wss])
    ]
    tasks += [asyncio.create_task(churner(run, i % 4 == 3, random.Random(f"{seed}/c{i}"))) for i in range(churners)]
    tasks += [asyncio.create_task(turner(run, random.Random(f"{seed}/t{i}"))) for i in range(turners)]
    slow_tasks = []
    if slow_readers:
        gap = seconds / slow_readers
        for i in range(slow_readers):
            await asyncio.sleep(gap * 0.5 if i == 0 else gap)
            slow_tasks.append(asyncio.create_task(slow_reader(run, i % 4 == 3)))
    await asyncio.sleep(max(0.0, run.stop_at - time.perf_counter()))
    await asyncio.wait_for(asyncio.gather(*tasks), run.timeout * 4 + 5)
    if slow_tasks:
        await asyncio.wait_for(asyncio.gather(*slow_tasks), run.stall + 30)


@dataclass
class SoakResult:
    duration: float
    clients: int
    ws_clients: int
    stall: float
    cut_slack: float
    stats: Stats
    baseline: dict[str, list[float]]
    slow: list[SlowReader]
    rss_idle: int
    rss_connected: int
    rss_end: int
    rss_peak: int
    rss_after_close: int
    per_connection: float
    outbound_limit: int
    max_concurrent_slow: int
    daemon_cpu: float
    kit_cpu: float
    elapsed: float
    alive: bool
    unix_stall_lines: int
    probe_baseline: list[float] = field(default_factory=list)
    probe_soak: list[float] = field(default_factory=list)
    floor_baseline: list[float] = field(default_factory=list)
    floor_soak: list[float] = field(default_factory=list)
    pinning: Pinning | None = None
    steal_baseline: float = 0.0
    steal_soak: float = 0.0

    @property
    def p99(self) -> float:
        return percentile(self.stats.all_latencies(), 0.99)

    @property
    def p50(self) -> float:
        return percentile(self.stats.all_latencies(), 0.5)

    @property
    def baseline_p99(self) -> float:
        return percentile([x for v in self.baseline.values() for x in v], 0.99)

    @property
    def baseline_p50(self) -> float:
        return percentile([x for v in self.baseline.values() for x in v], 0.5)

    @property
    def ratio(self) -> float:
        return self.p99 / self.baseline_p99 if self.baseline_p99 > 0 else float("inf")

    @property
    def rss_bound(self) -> int:
        return self.rss_connected + self.max_concurrent_slow * (self.outbound_limit + BATCH_SLACK) + RSS_SLACK

    @property
    def rss_growth(self) -> int:
        return self.rss_end - self.rss_connected

    def slow_failures(self) -> list[str]:
        bad = []
        for i, r in enumerate(self.slow):
            after = r.cut_after
            if after is None:
                bad.append(f"slow reader {i} ({r.surface}) not cut off {r.note}".rstrip())
            elif after > self.stall + self.cut_slack:
                bad.append(f"slow reader {i} ({r.surface}) cut {after:.2f} s after its last read")
            elif after < self.stall - (EARLY_SLACK_WS if r.surface == "ws" else 0.05):
                bad.append(f"slow reader {i} ({r.surface}) cut only {after:.2f} s after its last read")
        return bad

    def failures(self, *, p99_target: float | None = 1.5) -> list[str]:
        out = []
        if not self.alive:
            out.append("the daemon exited")
        if self.stats.errors:
            out.append(f"{self.stats.errors} errors on well-behaved clients")
        if p99_target is not None and not self.ratio <= p99_target:
            out.append(f"p99 {self.ratio:.2f}x the baseline (target ≤ {p99_target}x)")
        out += self.slow_failures()
        if self.rss_peak > self.rss_bound:
            out.append(f"RSS peak {self.rss_peak / MIB:.1f} MiB over the bound {self.rss_bound / MIB:.1f} MiB")
        cut_unix = sum(1 for r in self.slow if r.surface == "sock" and r.cut is not None)
        if self.unix_stall_lines != cut_unix:
            out.append(f"{self.unix_stall_lines} stall warnings for {cut_unix} Unix slow readers cut off (one each)")
        if self.rss_growth > RSS_SLACK:
            out.append(f"RSS grew {self.rss_growth / MIB:.1f} MiB during the soak")
        return out

    def summary(self) -> str:
        cuts = [r.cut_after for r in self.slow if r.cut_after is not None]
        cut_text = (
            f"{len(cuts)}/{len(self.slow)} cut_after_last_read=median {statistics.median(cuts):.2f}s "
            f"max {max(cuts):.2f}s (≤{self.stall:g}+{self.cut_slack:g})"
            if cuts
            else f"0/{len(self.slow)}"
        )
        ok = not self.failures()
        return (
            f"soak: {'OK' if ok else 'FAILED'} duration={self.duration:g}s clients={self.clients}+{self.ws_clients}ws "
            f"calls={self.stats.calls} churn={self.stats.churn_cycles} turns={self.stats.turns} "
            f"errors={self.stats.errors} p50={self.p50 * 1e3:.2f}ms p99={self.p99 * 1e3:.2f}ms "
            f"baseline_p50={self.baseline_p50 * 1e3:.2f}ms baseline_p99={self.baseline_p99 * 1e3:.2f}ms "
            f"p99_ratio={self.ratio:.2f}x(≤1.5) slow_readers={cut_text} "
            f"rss idle={self.rss_idle / MIB:.1f} connected={self.rss_connected / MIB:.1f} "
            f"peak={self.rss_peak / MIB:.1f} (bound {self.rss_bound / MIB:.1f}) growth={self.rss_growth / MIB:+.1f}MiB "
            f"per_conn={self.per_connection / 1024:.1f}KiB cpu daemon={self.daemon_cpu:.0%} kit={self.kit_cpu:.0%} "
            f"{_probe_text('probe', self.probe_soak, self.probe_baseline)}"
            f"{_probe_text('floor', self.floor_soak, self.floor_baseline)}"
            f"steal baseline={self.steal_baseline:.0%} soak={self.steal_soak:.0%} "
            f"{self.pinning.text() if self.pinning else ''}elapsed={self.elapsed:.0f}s"
        )


def _p99_ratio(soak: list[float], baseline: list[float]) -> float:
    base = percentile(baseline, 0.99)
    return percentile(soak, 0.99) / base if base > 0 else float("nan")


def _probe_text(name: str, soak: list[float], baseline: list[float]) -> str:
    if not soak or not baseline:
        return ""
    return (
        f"{name} p99={percentile(soak, 0.99) * 1e3:.2f}ms baseline_p99={percentile(baseline, 0.99) * 1e3:.2f}ms "
        f"ratio={_p99_ratio(soak, baseline):.2f}x "
    )


def vm(daemon: Daemon, name: str) -> int:
    try:
        return daemon.proc_status(name)
    except (OSError, AssertionError):
        return 0


async def run_soak(
    factory: DaemonFactory,
    *,
    duration: float = 60.0,
    clients: int = 1000,
    ws_clients: int = 100,
    interval: float = 2.0,
    churners: int = 20,
    turners: int = 8,
    slow_readers: int = 20,
    stall: float = 2.0,
    outbound_limit: int = MIB,
    baseline_secs: float = 10.0,
    cut_slack: float = 1.0,
    timeout: float = 10.0,
    seed: int = 16,
    probe_rate: float = PROBE_RATE,
    pin: bool = False,
) -> SoakResult:
    raise_nofile()
    pinning = Pinning.split() if pin else None
    async with contextlib.AsyncExitStack() as stack:
        floor = await stack.enter_async_context(floor_server(pinning)) if probe_rate > 0 else None
        started = time.perf_counter()
        daemon = factory.start(
            config(stall, outbound_limit), no_gateway=False, args=["--gateway-port", "0", "--log-level", "warning"]
        )
        if pinning is not None:
            pin_process(daemon.pid, pinning.daemon)
            pin_process(os.getpid(), pinning.kit)
        assert daemon.ready_line is not None
        m = READY_RE.match(daemon.ready_line)
        assert m is not None and m["gateway"] != "off", daemon.ready_line
        run = Run(
            daemon=daemon,
            socket_path=str(daemon.socket_path),
            ws_url="ws" + m["gateway"].removeprefix("http") + "/rpc",
            token=await pair(daemon),
            timeout=timeout,
            stall=stall,
            pinning=pinning,
        )
        # warm-up: lazy imports, a turn, a WebSocket peer
        socks, wss = await open_many(run, 2, 1)
        sid = (await socks[0].call("session/new", {}, timeout))[0]["sessionId"]
        await socks[0].call("session/prompt", {"sessionId": sid, "prompt": "/stream 2000"}, timeout)
        run.stats.recording = False
        await phase(run, socks, wss, 0.01, 1.0, f"{seed}/warm")
        await close_many(socks, wss)
        warm_errors = run.stats.errors

        # 1. baseline: few clients, the same calls at the same total rate
        few_sock = max(1, min(10, clients)) if clients else 0
        few_ws = 1 if ws_clients else 0
        many = clients + ws_clients
        base_interval = interval * (few_sock + few_ws) / max(1, many)
        socks, wss = await open_many(run, few_sock, few_ws)
        settle_gc()
        run.stats.recording = True
        machine0 = machine_jiffies()
        base_probe = asyncio.create_task(probe_during(run, run.socket_path, probe_rate, baseline_secs))
        base_floor = asyncio.create_task(probe_during(run, floor, probe_rate, baseline_secs, "floor"))
        await phase(run, socks, wss, base_interval, baseline_secs, f"{seed}/base")
        probe_baseline, floor_baseline = await base_probe, await base_floor
        steal_baseline = steal_share(machine0, machine_jiffies())
        await close_many(socks, wss)
        baseline, run.stats.latencies = run.stats.latencies, {}
        base_calls, run.stats.calls = run.stats.calls, 0
        await asyncio.sleep(0.5)

        # 2. ramp
        rss_idle = vm(daemon, "VmRSS")
        socks, wss = await open_many(run, clients, ws_clients)
        await asyncio.sleep(0.5)
        settle_gc()
        rss_connected = vm(daemon, "VmRSS")
        per_connection = (rss_connected - rss_idle) / max(1, many)

        # 3. soak
        cpu0, kit0, t0 = cpu_secs(daemon.pid), time.process_time(), time.perf_counter()
        machine0 = machine_jiffies()
        soak_probe = asyncio.create_task(probe_during(run, run.socket_path, probe_rate, duration))
        soak_floor = asyncio.create_task(probe_during(run, floor, probe_rate, duration, "floor"))
        await phase(
            run,
            socks,
            wss,
            interval,
            duration,
            f"{seed}/soak",
            churners=churners,
            turners=turners,
            slow_readers=slow_readers,
        )
        probe_soak, floor_soak = await soak_probe, await soak_floor
        steal_soak = steal_share(machine0, machine_jiffies())
        # nothing more is timed (and a test that runs the kit in its own process keeps a normal collector)
        gc.unfreeze()
        wall = time.perf_counter() - t0
        daemon_cpu = (cpu_secs(daemon.pid) - cpu0) / wall if daemon.is_running() else 0.0
        kit_cpu = (time.process_time() - kit0) / wall
        rss_end, rss_peak = vm(daemon, "VmRSS"), vm(daemon, "VmHWM")
        # every steady client must still be connected and answering
        alive = daemon.is_running()
        if alive:
            try:
                if socks:
                    await socks[0].call("status", {}, timeout)
            except CallFailed as exc:
                run.stats.error(exc.kind, f"after the soak: {exc}")
        await close_many(socks, wss)
        await asyncio.sleep(1.0)
        rss_after_close = vm(daemon, "VmRSS")
        alive = daemon.is_running()
        intervals = sorted(
            [(r.last_read or r.started, +1) for r in run.slow]
            + [(r.cut or r.last_read or r.started, -1) for r in run.slow]
        )
        concurrent = peak = 0
        for _, delta in intervals:
            concurrent += delta
            peak = max(peak, concurrent)
        unix_stall_lines = sum(
            1 for line in list(daemon.stderr_lines) if STALL_WARNING in line and "closing connection unix:" in line
        )
        if warm_errors:
            run.stats.details.insert(0, f"({warm_errors} errors during the warm-up)")
        del base_calls
        return SoakResult(
            duration=duration,
            clients=clients,
            ws_clients=ws_clients,
            stall=stall,
            cut_slack=cut_slack,
            stats=run.stats,
            baseline=baseline,
            slow=run.slow,
            rss_idle=rss_idle,
            rss_connected=rss_connected,
            rss_end=rss_end,
            rss_peak=rss_peak,
            rss_after_close=rss_after_close,
            per_connection=per_connection,
            outbound_limit=outbound_limit,
            max_concurrent_slow=max(1, peak),
            daemon_cpu=daemon_cpu,
            kit_cpu=kit_cpu,
            elapsed=time.perf_counter() - started,
            alive=alive,
            unix_stall_lines=unix_stall_lines,
            probe_baseline=probe_baseline,
            probe_soak=probe_soak,
            floor_baseline=floor_baseline,
            floor_soak=floor_soak,
            pinning=pinning,
            steal_baseline=steal_baseline,
            steal_soak=steal_soak,
        )


def report(result: SoakResult) -> list[str]:
    lines = []
    for key in sorted(set(result.baseline) | set(result.stats.latencies)):
        base, soak = result.baseline.get(key, []), result.stats.latencies.get(key, [])
        lines.append(
            f"{key:>17}: baseline n={len(base)} p50={percentile(base, 0.5) * 1e3:.2f}ms "
            f"p99={percentile(base, 0.99) * 1e3:.2f}ms | soak n={len(soak)} p50={percentile(soak, 0.5) * 1e3:.2f}ms "
            f"p99={percentile(soak, 0.99) * 1e3:.2f}ms max={max(soak, default=0) * 1e3:.1f}ms"
        )
    for i, r in enumerate(result.slow):
        after = r.cut_after
        lines.append(
            f"slow reader {i} ({r.surface}): cut {'never' if after is None else f'{after:.2f} s'} after its last read"
            + (f" [{r.note}]" if r.note else "")
        )
    lines.append(
        f"unix stall warnings: {result.unix_stall_lines} for {sum(r.surface == 'sock' for r in result.slow)} unix "
        f"slow readers; RSS after every client closed: {result.rss_after_close / MIB:.1f} MiB; "
        f"most slow readers stalled at once: {result.max_concurrent_slow}"
    )
    for kind, count in result.stats.kinds.most_common():
        lines.append(f"errors of kind {kind!r}: {count}")
    lines += [f"error: {d}" for d in result.stats.details]
    lines += [f"target missed: {f}" for f in result.failures()]
    return lines


async def _main(args: argparse.Namespace) -> int:
    factory = DaemonFactory()
    try:
        result = await run_soak(
            factory,
            duration=args.duration,
            clients=args.clients,
            ws_clients=args.ws_clients,
            interval=args.interval,
            churners=args.churners,
            turners=args.turners,
            slow_readers=args.slow_readers,
            stall=args.stall,
            outbound_limit=args.outbound_limit,
            baseline_secs=args.baseline_secs,
            cut_slack=args.cut_slack,
            timeout=args.timeout,
            seed=args.seed,
            probe_rate=args.probe_rate,
            pin=args.pin,
        )
    finally:
        factory.close()
    for line in report(result):
        print(line, flush=True)
    print(result.summary(), flush=True)
    return 0 if not result.failures() else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="soak seconds (default 60)")
    parser.add_argument("--clients", type=int, default=1000, help="steady Unix-socket clients (default 1000)")
    parser.add_argument("--ws-clients", type=int, default=100, help="steady WebSocket clients (default 100)")
    parser.add_argument("--interval", type=float, default=2.0, help="mean seconds between a client's calls (2)")
    parser.add_argument("--churners", type=int, default=20, help="connect/disconnect loops (default 20)")
    parser.add_argument("--turners", type=int, default=8, help="clients running scripted turns (default 8)")
    parser.add_argument("--slow-readers", type=int, default=20, help="slow readers over the soak (default 20)")
    parser.add_argument("--stall", type=float, default=2.0, help="[limits] outbound_stall_secs (default 2)")
    parser.add_argument("--outbound-limit", type=int, default=MIB, help="[limits] max_outbound_buffer_bytes")
    parser.add_argument("--baseline-secs", type=float, default=10.0, help="baseline seconds (default 10)")
    parser.add_argument("--cut-slack", type=float, default=1.0, help="allowed cut-off beyond the stall (1 s)")
    parser.add_argument("--timeout", type=float, default=10.0, help="a call unanswered this long is an error")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument(
        "--probe-rate",
        type=float,
        default=PROBE_RATE,
        help="the probe's and the floor probe's calls a second (0: neither)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="this kit on one CPU, the daemon and the probe on the others (attributes the tail; see README)",
    )
    args = parser.parse_args(argv)
    try:
        import uvloop

        return int(uvloop.run(_main(args)))
    except ImportError:
        return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
