"""`zeroclaw rpc` and `zeroclaw status`: one call with JSON out, or an interactive line client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from app.paths import resolve
from rpc.client import Client, RemoteError

__all__ = ["connect", "interactive", "one_shot"]


def _print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    sys.stdout.flush()


async def connect(config_dir: str | None) -> Client:
    endpoint = resolve(config_dir).endpoint
    try:
        return await Client.connect(endpoint)
    except OSError as exc:
        reason = exc.strerror or exc
        raise SystemExit(f"zeroclaw: cannot connect to {endpoint}: {reason} (is the daemon running?)") from None


async def one_shot(config_dir: str | None, method: str, params_json: str | None) -> int:
    try:
        params = orjson.loads(params_json) if params_json else None
    except orjson.JSONDecodeError:
        print("zeroclaw: PARAMS must be JSON", file=sys.stderr)
        return 2
    client = await connect(config_dir)
    try:
        await client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "zeroclaw-cli"}})
        _print_json(await client.call(method, params))
        return 0
    except RemoteError as exc:
        _print_json({"error": exc.error})
        return 1
    except ConnectionError as exc:
        print(f"zeroclaw: {exc}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def _history_file(config_dir: str | None) -> Path:
    return resolve(config_dir).config_dir / "rpc_history"


async def interactive(config_dir: str | None) -> int:
    """Like `socat READLINE UNIX-CONNECT:…`: lines go out verbatim, everything received is printed.

    A line that does not start with `{` is shorthand for a request: `METHOD [PARAMS_JSON]`.
    """
    try:
        import readline
    except ImportError:  # Windows: plain input() still works
        readline = None  # type: ignore[assignment]
    history = _history_file(config_dir)
    if readline is not None:
        with contextlib.suppress(OSError):
            readline.read_history_file(history)
    client = await connect(config_dir)
    client.on_message = lambda message: _print_json(message)
    loop = asyncio.get_running_loop()
    next_id = 1
    print("connected; type JSON-RPC frames or `METHOD {params}`; Ctrl-D to quit", file=sys.stderr)
    try:
        while True:
            try:
                line = await loop.run_in_executor(None, input, "")
            except EOFError:
                return 0
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                await client.send_raw(line.encode())
                continue
            method, _, rest = line.partition(" ")
            frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": f"cli-{next_id}"}
            next_id += 1
            try:
                if rest.strip():
                    frame["params"] = orjson.loads(rest)
            except orjson.JSONDecodeError:
                print("params must be JSON", file=sys.stderr)
                continue
            await client.send(frame)
    finally:
        if readline is not None:
            with contextlib.suppress(OSError):
                readline.write_history_file(history)
                os.chmod(history, 0o600)
        await client.close()
