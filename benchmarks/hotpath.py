"""In-process cost of one `status` request: the daemon's protocol stack against the floor's, no sockets.

1000 protocol instances of each (the daemon's `NdjsonProtocol` with a real registry, authenticator and
`status` handler; the floor's `FloorProtocol`) are fed one frame per read, round-robin, from a fake transport
whose `write` only counts bytes. What is left is the Python each server runs per request, with the
per-connection state of 1000 connections competing for the CPU caches, as under the 1000-connection load.
It isolates the interpreter's share from the kernel's, which `run.py` cannot; use it to compare code
changes (alternate runs, take the best of several: the machine is noisy).

    python benchmarks/hotpath.py            # best of 5 rounds of 30 requests per connection
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor_server import FloorProtocol  # a script beside this one, not a package

from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.config.store import ConfigStore
from app.paths import resolve
from app.services import Services
from rpc.core.dispatcher import Dispatcher
from rpc.methods import build_registry
from rpc.transports.base import Peer
from rpc.transports.stream import NdjsonProtocol

CONNECTIONS = 1000
ROUNDS = 5
PER_ROUND = 30
INITIALIZE = b'{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}\n'
STATUS = b'{"jsonrpc":"2.0","method":"status","params":{},"id":12345}\n'


class CountingTransport:
    """The asyncio transport surface both protocols use; writes are only counted."""

    def __init__(self) -> None:
        self.written = 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class NoSessions:
    def __init__(self) -> None:
        self.live: dict[str, Any] = {}


def daemon_protocols(data_dir: str) -> list[Any]:
    paths = resolve(data_dir)
    store = ConfigStore(paths.config_dir)
    auth = Authenticator(lambda: store.current, lambda: store.policy_generation, os.getuid())
    services = Services(
        paths=paths,
        config_store=store,
        auth=auth,
        audit=AuditLog(None),
        db=None,  # `status` needs neither a database nor pairing
        pairing=None,  # type: ignore[arg-type]
        sessions=NoSessions(),  # type: ignore[arg-type]
    )
    server = Dispatcher(build_registry(), services, services.audit, limits=lambda: store.current.limits)
    protocols = []
    for _ in range(CONNECTIONS):
        protocol = NdjsonProtocol(server, lambda transport: Peer("bench", uid=os.getuid()))
        protocol.connection_made(CountingTransport())  # type: ignore[arg-type]
        protocol.data_received(INITIALIZE)
        protocols.append(protocol)
    return protocols


def floor_protocols() -> list[Any]:
    protocols = []
    for _ in range(CONNECTIONS):
        protocol = FloorProtocol()
        protocol.connection_made(CountingTransport())  # type: ignore[arg-type]
        protocols.append(protocol)
    return protocols


def best_us_per_request(protocols: list[Any]) -> float:
    for protocol in protocols:  # the first `status` of a connection admits the method
        protocol.data_received(STATUS)
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(PER_ROUND):
            for protocol in protocols:
                protocol.data_received(STATUS)
        best = min(best, time.process_time() - started)
    return best / (PER_ROUND * CONNECTIONS) * 1e6


async def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        daemon = daemon_protocols(data_dir)
        await asyncio.sleep(0.05)  # the `initialize` tasks finish
        floor = floor_protocols()
        daemon_us, floor_us = best_us_per_request(daemon), best_us_per_request(floor)
    print(f"daemon {daemon_us:.2f} µs/request, floor {floor_us:.2f} µs/request, ratio {daemon_us / floor_us:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
