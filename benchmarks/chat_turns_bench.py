"""A turn's cost at turn 10 and at turn N of one long session, chat and ACP (issue 30, R-MULTI-5).

The long history is seeded quickly: the daemon makes the session and runs its first turn over the socket, stops,
and the kit copies that turn's rows (`user`, `assistant`) as raw SQL until the transcript holds N - WINDOW turns
(SQLite only). The daemon starts again and every measured turn is a `session/prompt` over the Unix socket.

    python benchmarks/chat_turns_bench.py                       # N = 10,000, chat and ACP, 3 repeats
    python benchmarks/chat_turns_bench.py --turns 2000 --mode chat

A point is the median latency (write to answer) of the turns around it (1..20 for turn 10, N - 24..N + 25 for
turn N), and the daemon's CPU per turn over them (/proc/<pid>/stat, 10 ms ticks: coarse over 20 turns). The first
turns after the restart are in the window: they read the whole history once and trim it (a chat session, since
R-MULTI-5, before its first turn), as a user resuming the session would.

    chat: turn 10 = … ms (cpu … ms)  turn 10000 = … ms (cpu … ms)  ratio = …x (target ≤ 1.5x; median of 3)
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak  # noqa: E402  # its lean client and CPU reader; it puts the e2e harness on the path
from e2e_harness import DaemonFactory  # noqa: E402

EARLY: Final = 20  # turns 1..20: around turn 10
WINDOW: Final = 25  # turns either side of the late point
TIMEOUT: Final = 30.0
ROW_COLUMNS: Final = (
    "session_id, idx, role, content, tool_call_id, name, marker, turn_id, interaction_surface, complete, created_at"
)


@dataclass(frozen=True, slots=True)
class Point:
    turn: int
    latency_ms: float
    cpu_ms: float


async def turns(socket: str, pid: int, session_id: str, mode: str, first: int, count: int) -> Point:
    """`count` sequential turns on the session (attached with `session/new`), numbered from `first`."""
    client = await soak.open_socket(socket, TIMEOUT)
    try:
        await client.call("session/new", {"sessionId": session_id, "mode": mode}, TIMEOUT)
        latencies: list[float] = []
        cpu0 = soak.cpu_secs(pid)
        for n in range(first, first + count):
            result, seconds = await client.call(
                "session/prompt", {"sessionId": session_id, "prompt": f"turn {n}"}, TIMEOUT
            )
            assert result["stopReason"] == "end_turn", result
            latencies.append(seconds)
        cpu = soak.cpu_secs(pid) - cpu0
    finally:
        client.close()
    return Point(first + (count - 1) // 2, 1000 * statistics.median(latencies), 1000 * cpu / count)


async def new_session(socket: str, mode: str) -> str:
    client = await soak.open_socket(socket, TIMEOUT)
    try:
        opened, _ = await client.call("session/new", {"mode": mode}, TIMEOUT)
    finally:
        client.close()
    return str(opened["sessionId"])


def seed(database: Path, mode: str, session_id: str, total_turns: int) -> None:
    """Copy the session's first turn (its rows) until it has `total_turns` turns; ACP turns get their records."""
    sessions, transcript = ("acp_sessions", "acp_transcript") if mode == "acp" else ("chat_sessions", "chat_messages")
    db = sqlite3.connect(database)
    with db:
        template = db.execute(
            f"SELECT {ROW_COLUMNS} FROM {transcript} WHERE session_id = ? ORDER BY idx", (session_id,)
        ).fetchall()
        per_turn = len(template)
        rows, turn_records = [], []
        for turn in range(1, total_turns):
            turn_id = f"t_seed{turn:012d}"
            first = turn * per_turn
            for offset, row in enumerate(template):
                rows.append((*row[:1], first + offset, *row[2:7], turn_id, *row[8:]))
            turn_records.append(
                (session_id, turn_id, template[0][8], first, template[0][10], template[0][10], "end_turn")
            )
        db.executemany(f"INSERT INTO {transcript} ({ROW_COLUMNS}) VALUES ({', '.join('?' * 11)})", rows)
        if mode == "acp":
            db.executemany(
                "INSERT INTO acp_turns (session_id, turn_id, interaction_surface, first_index, started_at, "
                "finished_at, stop_reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
                turn_records,
            )
        db.execute(f"UPDATE {sessions} SET next_index = ? WHERE session_id = ?", (total_turns * per_turn, session_id))
    db.close()


async def run(factory: DaemonFactory, mode: str, total: int) -> tuple[Point, Point]:
    daemon = factory.start(None, args=["--log-level", "warning"])
    socket = str(daemon.socket_path)
    short = await new_session(socket, mode)
    early = await turns(socket, daemon.pid, short, mode, 1, EARLY)
    long = await new_session(socket, mode)
    await turns(socket, daemon.pid, long, mode, 1, 1)
    config_dir = daemon.config_dir
    daemon.stop()
    seed(daemon.data_dir / "zeroclaw.db", mode, long, total - WINDOW)
    daemon = factory.start(None, config_dir=config_dir, root=daemon.root, args=["--log-level", "warning"])
    late = await turns(str(daemon.socket_path), daemon.pid, long, mode, total - WINDOW + 1, 2 * WINDOW)
    daemon.stop()
    return early, late


async def main_async(args: argparse.Namespace) -> None:
    factory = DaemonFactory()
    try:
        for mode in args.mode:
            runs = [await run(factory, mode, args.turns) for _ in range(args.repeat)]
            for early, late in runs:
                print(
                    f"  {mode}: turn {early.turn} {early.latency_ms:.2f} ms (cpu {early.cpu_ms:.2f})  "
                    f"turn {late.turn} {late.latency_ms:.2f} ms (cpu {late.cpu_ms:.2f})",
                    flush=True,
                )
            early_ms = statistics.median(e.latency_ms for e, _ in runs)
            late_ms = statistics.median(la.latency_ms for _, la in runs)
            early_cpu = statistics.median(e.cpu_ms for e, _ in runs)
            late_cpu = statistics.median(la.cpu_ms for _, la in runs)
            print(
                f"{mode}: turn {runs[0][0].turn} = {early_ms:.2f} ms (cpu {early_cpu:.2f} ms)  "
                f"turn {runs[0][1].turn} = {late_ms:.2f} ms (cpu {late_cpu:.2f} ms)  "
                f"ratio = {late_ms / early_ms:.2f}x (target ≤ 1.5x; median of {args.repeat})",
                flush=True,
            )
    finally:
        factory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10_000, help="the late point (default 10000)")
    parser.add_argument("--mode", choices=["chat", "acp"], action="append", help="chat, acp (default both)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh daemons per mode (default 3)")
    args = parser.parse_args(argv)
    args.mode = args.mode or ["chat", "acp"]
    if args.turns <= EARLY + WINDOW:
        parser.error(f"--turns must be over {EARLY + WINDOW}")
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
