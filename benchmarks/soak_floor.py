"""The soak kit's floor (benchmarks/soak.py): a server that does nothing but answer, probed alongside the daemon.

It listens on a Unix socket and answers every NDJSON request at once, in the read callback, with an empty result
(no dispatcher, no storage, no other clients). The kit runs a second probe against it during the baseline and the
soak: what that probe's p99 does under the soak is what the machine's load alone (the daemon and the kit sharing
its CPUs) does to a call's tail, the floor under anything the daemon itself adds.

    python benchmarks/soak_floor.py SOCKET        # prints "ready" once it listens; runs until killed
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from typing import cast

import orjson


class Answerer(asyncio.Protocol):
    """One line in, one answer out, inline: `{"jsonrpc": "2.0", "id": <the request's>, "result": {}}`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        *lines, self.pending = (self.pending + data).split(b"\n")
        answers = [orjson.dumps({"jsonrpc": "2.0", "id": orjson.loads(line).get("id"), "result": {}}) for line in lines]
        if answers:
            self.transport.write(b"\n".join(answers) + b"\n")


async def serve(path: str) -> None:
    server = await asyncio.get_running_loop().create_unix_server(Answerer, path)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    gc.disable()  # nothing it allocates lives on: its own collector must not add pauses to what it measures
    path = sys.argv[1]
    if os.path.exists(path):
        os.unlink(path)
    try:
        import uvloop  # the daemon's loop too: the floor is the fastest server of the same kind

        uvloop.run(serve(path))
    except ImportError:
        asyncio.run(serve(path))


if __name__ == "__main__":
    main()
