"""`session/list` pages at 100 and 50,000 stored sessions (issue 30, R-MULTI-4).

    python benchmarks/session_list_bench.py [--sessions 0,100,50000] [--calls 2000]

For each count: a daemon makes its data dir and stops; the sessions are inserted into its SQLite database with
plain SQL (distinct activity times, titles on most, a few killed, a fifth of them chat sessions); the daemon
starts again and, over its socket:

* idle RSS, 1 s after ready (no call yet);
* `session/list {limit:50}`: the median and p99 of `--calls` sequential calls (after 50 unmeasured), the same
  with a cursor from the middle of the list, and with a title `query`;
* a cursor walk of the whole list in pages of 1000 and of 50: every session not killed exactly once, in order
  (last activity, then id, then mode, descending), and its time;
* RSS after the walks; then `limit:50` again once a whole list is kept in memory (only a list of at most 4,096
  sessions is: the list cache, docs/sessions-storage.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

READY = re.compile(r"zeroclaw daemon ready: socket=(\S+) gateway=(\S+)")
HERE = Path(__file__).resolve().parents[1]
BASE = datetime(2026, 1, 1, tzinfo=UTC)
INSERT = (
    "INSERT INTO {} (session_id, owner, agent_alias, workspace_dir, interaction_surface, created_at, last_activity, "
    "closed_at, killed_at, next_index, title, title_fold) VALUES (?, 'owner', 'default', '/w', 'rpc', ?, ?, NULL, ?, "
    "2, ?, ?)"
)


def start(workdir: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")} | {"PYTHONPATH": str(HERE)}
    argv = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())", "daemon"]
    argv += ["--config-dir", workdir, "--log-level", "warning", "--no-gateway"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = READY.search(raw.decode(errors="replace"))
        if m:
            return proc, m[1]
    raise RuntimeError("the daemon exited before ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def seed(database: Path, count: int) -> None:
    """`count` sessions, activity 1 ms apart; every 50th killed, every 10th untitled, every 5th a chat session."""
    sql_time = lambda at: at.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")  # noqa: E731
    rows: dict[str, list[tuple[Any, ...]]] = {"acp_sessions": [], "chat_sessions": []}
    for n in range(count):
        at = sql_time(BASE + timedelta(milliseconds=n))
        title = None if n % 10 == 0 else f"Session {n} about topic {n % 97}"
        table = "chat_sessions" if n % 5 == 0 else "acp_sessions"
        killed = at if n % 50 == 49 else None
        rows[table].append((f"s_{n:08d}", at, at, killed, title, None if title is None else title.casefold()))
    with sqlite3.connect(database) as con:
        for table, values in rows.items():
            con.executemany(INSERT.format(table), values)


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.next_id = reader, writer, 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.writer.write(json.dumps(frame).encode() + b"\n")
        answer = json.loads(await self.reader.readline())
        if "result" not in answer:
            raise RuntimeError(answer)
        result: dict[str, Any] = answer["result"]
        return result


async def timed(client: Client, params: dict[str, Any], calls: int) -> dict[str, float]:
    for _ in range(50):
        await client.call("session/list", params)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        await client.call("session/list", params)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return {"p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1]}


async def walk(client: Client, limit: int) -> tuple[list[tuple[str, str, str]], float]:
    keys: list[tuple[str, str, str]] = []
    cursor = None
    t = time.perf_counter()
    while True:
        page = await client.call("session/list", {"limit": limit, **({"cursor": cursor} if cursor else {})})
        keys += [(s["lastActivity"], s["sessionId"], s["mode"]) for s in page["sessions"]]
        if (cursor := page["nextCursor"]) is None:
            return keys, (time.perf_counter() - t) * 1e3


async def measure(socket: str, count: int, calls: int, pid: int) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 26)
    client = Client(reader, writer)
    await client.call("initialize", {"protocolVersion": 1})
    out: dict[str, Any] = {}
    if count:
        out["limit50"] = await timed(client, {"limit": 50}, calls)
        deep, seen = None, 0
        while seen < count // 2:  # a cursor from the middle of the list
            page = await client.call(
                "session/list", {"limit": min(1000, count // 2), **({"cursor": deep} if deep else {})}
            )
            deep, seen = page["nextCursor"], seen + len(page["sessions"])
        out["limit50_deep"] = await timed(client, {"limit": 50, "cursor": deep}, calls) if deep else None
        out["limit50_query"] = await timed(client, {"limit": 50, "query": "topic 7"}, calls // 4)
        expected = count - count // 50
        for limit in (1000, 50):
            keys, ms = await walk(client, limit)
            assert len(keys) == expected and len(set(keys)) == expected, (limit, len(keys), len(set(keys)))
            assert keys == sorted(keys, reverse=True), "out of order"
            out[f"walk{limit}_ms"] = ms
        out["walk_ok"] = True
        out["rss_after_mib"] = rss_mib(pid)
        out["limit50_after_walk"] = await timed(client, {"limit": 50}, calls)
    writer.close()
    return out


def run(count: int, calls: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="zc-list-")
    try:
        proc, _ = start(workdir)
        stop(proc)
        database = next(Path(workdir).rglob("zeroclaw.db"))
        t = time.perf_counter()
        seed(database, count)
        seeded_s = time.perf_counter() - t
        proc, socket = start(workdir)
        try:
            time.sleep(1.0)
            idle = rss_mib(proc.pid)
            result = asyncio.run(measure(socket, count, calls, proc.pid))
        finally:
            stop(proc)
        return {"sessions": count, "seed_s": round(seeded_s, 2), "idle_rss_mib": round(idle, 1), **result}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", default="0,100,50000")
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    results = [run(int(n), args.calls) for n in args.sessions.split(",")]
    for r in results:
        print(json.dumps(r))
    by_count = {r["sessions"]: r for r in results}
    if 100 in by_count and 50000 in by_count:
        ratio = by_count[50000]["limit50"]["p50_ms"] / by_count[100]["limit50"]["p50_ms"]
        print(f"limit:50 p50 at 50,000 / at 100: {ratio:.2f}")
    if 0 in by_count and 50000 in by_count:
        print(f"idle RSS at 50,000 / at 0: {by_count[50000]['idle_rss_mib'] / by_count[0]['idle_rss_mib']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
