"""Connect churn: the daemon's CPU per connect cycle (connect, `initialize`, one `status`, close), socket and WebSocket.

What one short-lived client costs the daemon, read from /proc/<pid>/stat around the run, so the number does not
depend on the client's own speed. Each repeat starts a fresh daemon (the soak kit's config, gateway on, a token
paired for the WebSocket peers).

    python benchmarks/churn.py                            # 3 repeats of 6 s per surface, 5 loops at once
    python benchmarks/churn.py --surface unix --secs 10   # one surface

One line per run, then one per surface with the medians:

    churn unix: cycles/s=… cpu=…% cpu_per_cycle=…ms (median of 3)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import soak  # its clients, its daemon config, and the e2e harness it puts on the path
from e2e_harness import READY_RE, DaemonFactory

WARM_CYCLES = 50


async def run_once(factory: DaemonFactory, surface: str, secs: float, loops: int) -> tuple[float, float, float]:
    """(cycles a second, daemon CPU %, daemon CPU ms per cycle) of one fresh daemon."""
    daemon = factory.start(
        soak.config(2.0, soak.MIB), no_gateway=False, args=["--gateway-port", "0", "--log-level", "warning"]
    )
    assert daemon.ready_line is not None
    ready = READY_RE.match(daemon.ready_line)
    assert ready is not None, daemon.ready_line
    url = "ws" + ready["gateway"].removeprefix("http") + "/rpc"
    token = await soak.pair(daemon)

    async def cycle() -> None:
        if surface == "ws":
            ws = await soak.WsClient.open(url, token, 10)
            await ws.call("status", {}, 10)
            await ws.close()
        else:
            client = await soak.open_socket(str(daemon.socket_path), 10)
            await client.call("status", {}, 10)
            client.close()

    for _ in range(WARM_CYCLES):
        await cycle()
    cycles = 0
    end = time.perf_counter() + secs

    async def loop() -> None:
        nonlocal cycles
        while time.perf_counter() < end:
            await cycle()
            cycles += 1

    cpu0, t0 = soak.cpu_secs(daemon.pid), time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(loops)))
    cpu, wall = soak.cpu_secs(daemon.pid) - cpu0, time.perf_counter() - t0
    daemon.stop()
    return cycles / wall, 100 * cpu / wall, 1000 * cpu / cycles


async def main_async(args: argparse.Namespace) -> None:
    factory = DaemonFactory()
    try:
        for surface in args.surface:
            runs = []
            for _ in range(args.repeat):
                rate, cpu, per_cycle = await run_once(factory, surface, args.secs, args.loops)
                print(f"  {surface}: cycles/s={rate:.0f} cpu={cpu:.0f}% cpu_per_cycle={per_cycle:.3f}ms", flush=True)
                runs.append((rate, cpu, per_cycle))
            rate, cpu, per_cycle = (statistics.median(r[i] for r in runs) for i in range(3))
            print(
                f"churn {surface}: cycles/s={rate:.0f} cpu={cpu:.0f}% cpu_per_cycle={per_cycle:.3f}ms "
                f"(median of {args.repeat})",
                flush=True,
            )
    finally:
        factory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--surface", choices=["unix", "ws"], action="append", help="unix, ws (default both)")
    parser.add_argument("--secs", type=float, default=6.0, help="seconds per run (default 6)")
    parser.add_argument("--loops", type=int, default=5, help="connect loops at once (default 5)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh daemons per surface (default 3)")
    args = parser.parse_args(argv)
    args.surface = args.surface or ["unix", "ws"]
    try:
        import uvloop

        uvloop.run(main_async(args))
    except ImportError:
        asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
