"""What an MCP tool call adds to a turn (R-MCP, issue 41): a no-op MCP tool (stdio, warm server) vs a built-in tool.

One daemon, one session, the `scripted` provider; every tool auto-approved. Each measured turn is one
`session/prompt` over the Unix socket, timed from the request to its answer (both steps and the tool call):

* `builtin`: `/tool read_file {"path": "notes.txt"}` (a built-in call of the same two-step shape);
* `mcp`: `/tool mcp__bench__noop {}` against tests/e2e/mcp_servers/crashy.py (the SDK's `MCPServer`, stdio),
  started by the warm-up turns.

Rounds alternate the two workloads; the p50 of each is reported and their difference is what the MCP path adds
(the SDK client, the JSON-RPC round trip to the server process, the server's own handling). Start-up: the
daemon's time to its ready line with no MCP server and with one configured (servers start on first use, so the
two should match).

    python benchmarks/mcp_bench.py                  # 5 rounds x 200 turns
    python benchmarks/mcp_bench.py --rounds 3 --turns 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "tests"))

from e2e_harness import Daemon, DaemonFactory  # noqa: E402
from session_client import Peer, new_sid  # noqa: E402

WARMUP: Final = 20
SERVER = ROOT / "tests" / "e2e" / "mcp_servers" / "crashy.py"
CONFIG = f"""\
[mcp.servers.bench]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]

[agents.default]
mcp_servers = ["bench"]
auto_approve = ["read_file", "mcp__bench__*"]
"""
PROMPTS: Final = {"builtin": '/tool read_file {"path": "notes.txt"}', "mcp": "/tool mcp__bench__noop {}"}


async def timed(peer: Peer, sid: str, prompt: str, turns: int) -> list[float]:
    out = []
    for _ in range(turns):
        start = time.perf_counter()
        answer = await peer.call("session/prompt", {"sessionId": sid, "prompt": prompt})
        out.append(time.perf_counter() - start)
        assert answer["stopReason"] == "end_turn", answer
    return out


async def turns(daemon: Daemon, rounds: int, count: int) -> dict[str, list[float]]:
    (daemon.data_dir / "workspaces" / "default").mkdir(parents=True, exist_ok=True)
    (daemon.data_dir / "workspaces" / "default" / "notes.txt").write_text("hello\n")
    samples: dict[str, list[float]] = {"builtin": [], "mcp": []}
    async with await Peer.open(daemon) as peer:
        sid = await new_sid(peer)
        for prompt in PROMPTS.values():
            await timed(peer, sid, prompt, WARMUP)
        for _ in range(rounds):
            for name, prompt in PROMPTS.items():
                # a fresh session each round: the context (and what the scripted provider reads) stays short
                sid = await new_sid(peer)
                samples[name].append(statistics.median(await timed(peer, sid, prompt, count)))
    return samples


def ready_secs(factory: DaemonFactory, config: str | None, times: int = 5) -> float:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        d = factory.start(config)
        out.append(time.perf_counter() - start)
        d.stop()
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    factory = DaemonFactory()
    try:
        samples = asyncio.run(turns(factory.start(CONFIG), args.rounds, args.turns))
        builtin, mcp = statistics.median(samples["builtin"]), statistics.median(samples["mcp"])
        print(f"turn p50: built-in tool {builtin * 1e3:.2f} ms, MCP no-op (stdio, warm) {mcp * 1e3:.2f} ms")
        added = (mcp - builtin) * 1e3
        print(f"added by MCP: {added:+.2f} ms per turn (target <= 3 ms; medians of {args.rounds} rounds)")
        plain, configured = ready_secs(factory, None), ready_secs(factory, CONFIG)
        print(f"start-up to ready: {plain * 1e3:.0f} ms without MCP, {configured * 1e3:.0f} ms with one configured")
    finally:
        factory.close()


if __name__ == "__main__":
    main()
