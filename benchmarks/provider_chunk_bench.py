"""Daemon CPU per streamed chunk through the `openai` provider (issue 39: at most 1.2x the hand-written client's).

    python benchmarks/provider_chunk_bench.py [--chunks 20000] [--turns 5] [--tree DIR]

A local OpenAI-compatible server in this process answers every `/v1/chat/completions` with `--chunks` SSE chunks of
one word each (then usage and `[DONE]`), written as fast as the socket takes them, 64 chunks per write. A fresh
daemon (this tree, or `--tree`, by PYTHONPATH) is pointed at it by `[providers.bench]`; one session runs `--turns`
turns over the Unix socket, and the daemon's CPU time (utime + stime of /proc/PID/stat) is read around each turn.
Printed: the median CPU microseconds per chunk (each chunk is one `agent_message_chunk` to the client), and the
chunks the client counted. Compare two trees in one sitting, alternating, on a quiet machine:

    git archive <before> app rpc gateway migrations | tar -x -C /tmp/before
    python benchmarks/provider_chunk_bench.py --tree /tmp/before; python benchmarks/provider_chunk_bench.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import session_list_bench as slb  # its start/stop of a daemon (a script beside this one, not a package)

TICKS = os.sysconf("SC_CLK_TCK")


def sse_body(chunks: int) -> list[bytes]:
    """The answer's body in writes of 64 chunks each."""
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}

    def one(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({**head, "choices": [choice]}).encode() + b"\n\n"

    events = [one({"role": "assistant", "content": ""})]
    events += [one({"content": f"w{i} "}) for i in range(chunks)]
    events.append(one({}, "stop"))
    usage = {"prompt_tokens": 3, "completion_tokens": chunks, "total_tokens": chunks + 3}
    events.append(b"data: " + json.dumps({**head, "choices": [], "usage": usage}).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return [b"".join(events[i : i + 64]) for i in range(0, len(events), 64)]


async def serve(chunks: int) -> tuple[asyncio.Server, int]:
    writes = sse_body(chunks)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length")),
            0,
        )
        await reader.readexactly(length)
        writer.write(head)
        for part in writes:
            writer.write(part)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.next_id = reader, writer, 0

    async def call(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The result, and the `agent_message_chunk` updates seen before it (and up to `turn_complete`)."""
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.writer.write(json.dumps(frame).encode() + b"\n")
        chunks, result, complete = 0, None, method != "session/prompt"
        while result is None or not complete:
            message = json.loads(await self.reader.readline())
            if message.get("id") == self.next_id:
                if "result" not in message:
                    raise RuntimeError(message)
                result = message["result"]
            elif message.get("method") == "session/update":
                kind = message["params"].get("type")
                chunks += kind == "agent_message_chunk"
                complete = complete or kind == "turn_complete"
        return result, chunks


async def run(tree: Path, chunks: int, turns: int) -> dict[str, Any]:
    server, port = await serve(chunks)
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "config.toml").write_text(
            f'[providers.bench]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\nmodel = "m"\n\n'
            '[agents.bench]\nprovider = "bench"\ntools = []\n'
        )
        proc, socket = await asyncio.to_thread(start, tree, workdir)
        try:
            reader, writer = await asyncio.open_unix_connection(socket, limit=2**24)
            client = Client(reader, writer)
            await client.call("initialize", {"protocolVersion": 1})
            session, _ = await client.call("session/new", {"agentAlias": "bench"})
            per_chunk, seen = [], []
            for turn in range(turns + 1):
                before = cpu_secs(proc.pid)
                result, got = await client.call("session/prompt", {"sessionId": session["sessionId"], "prompt": "go"})
                spent = cpu_secs(proc.pid) - before
                assert result["stopReason"] == "end_turn", result
                if turn:  # the first turn warms up (imports httpx and the provider)
                    per_chunk.append(spent / chunks * 1e6)
                    seen.append(got)
            writer.close()
        finally:
            slb.stop(proc)
    server.close()
    return {
        "tree": str(tree),
        "chunks_per_turn": chunks,
        "chunks_seen": seen,
        "cpu_us_per_chunk_median": round(statistics.median(per_chunk), 2),
        "cpu_us_per_chunk_all": [round(x, 2) for x in per_chunk],
    }


def start(tree: Path, workdir: str) -> tuple[Any, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")} | {"PYTHONPATH": str(tree)}
    env |= {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    import subprocess

    argv = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())", "daemon"]
    argv += ["--config-dir", workdir, "--log-level", "warning", "--no-gateway"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = slb.READY.search(raw.decode(errors="replace"))
        if m:
            return proc, m[1]
    raise RuntimeError("the daemon exited before ready")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chunks", type=int, default=20_000)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--tree", type=Path, default=slb.HERE)
    args = p.parse_args()
    print(json.dumps(asyncio.run(run(args.tree, args.chunks, args.turns))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
