"""`zeroclaw acp` (R-EDIT-1): ACP over stdio, relayed to the daemon of the config dir, which speaks ACP.

The bridge is a relay, not a second agent: each line from the editor goes to the daemon's local socket as it is,
but the `initialize` gets the dialect marker (`_meta["zeroclaw.acp"]`, with `--agent`), and each line from the
daemon goes to stdout as it is. Nothing else is written to stdout; the one line this command may write is on
stderr. When no daemon runs, `zeroclaw daemon --ephemeral` is started (gone about a second after its last client);
when that one cannot start, its own line saying why is the line on stderr (R-EPH-3).

The editor's requests are remembered until answered: when the daemon goes away, each gets an error at once, and
the bridge exits with status 1. At the end of stdin the socket's sending side is closed; the daemon answers what
it was sent and closes, and the bridge exits 0.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import orjson

from app.paths import resolve
from rpc.client import open_endpoint

__all__ = ["bridge"]

MARKER = "zeroclaw.acp"  # rpc/dialects/acp/updates.py's, not imported: the bridge starts without the protocol layer
READ_LIMIT = 256 * 1024 * 1024  # an editor's line: above any `max_frame_bytes`
READ_CHUNK = 1024 * 1024
START_TIMEOUT_SECS = 20.0
_NOTIFICATION = b'{"jsonrpc":"2.0","method":'  # the daemon's notifications: relayed without parsing
_GONE = -32603
READY = "zeroclaw daemon ready:"  # app/daemon.py's readiness line
ANOTHER_DAEMON = "already serves"  # app/daemon.py's line when another daemon holds the endpoint's lock


class DaemonGone(Exception):
    pass


def bridge(config_dir: str | None, agent: str | None) -> int:
    try:
        return asyncio.run(_bridge(config_dir, agent))
    except DaemonGone as exc:
        print(f"zeroclaw acp: {exc}", file=sys.stderr, flush=True)
        return 1
    except BrokenPipeError:  # the editor closed our stdout: it is gone, nobody to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0


async def _bridge(config_dir: str | None, agent: str | None) -> int:
    endpoint = resolve(config_dir).endpoint
    started = _Started()
    try:
        reader, writer = await _connect(config_dir, endpoint, started)
        stdin = await _stdin()
        stdout = _Stdout()
        pending: dict[bytes, Any] = {}  # the editor's request ids (encoded) → as it sent them
        ended = asyncio.Event()  # the editor closed stdin
        up = asyncio.create_task(_up(stdin, writer, pending, agent, ended))
        try:
            await _down(reader, stdout, pending)
        finally:
            up.cancel()
        if ended.is_set() and not pending:
            return 0
        for rid in pending.values():
            stdout.write(_gone_error(rid))
        await stdout.drain()
        # The daemon we started took the connection, then failed later in its start (a listener): its line says why.
        if (why := started.failure(wait=1.0)) is not None:
            raise DaemonGone(why)
        raise DaemonGone(f"the daemon went away; {len(pending)} pending request(s) answered with an error")
    finally:
        started.close()


async def _up(
    stdin: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    pending: dict[bytes, Any],
    agent: str | None,
    ended: asyncio.Event,
) -> None:
    try:
        while line := await stdin.readline():
            if line.strip():
                writer.write(_outgoing(line, pending, agent))
                await writer.drain()
        ended.set()
        if writer.can_write_eof():
            writer.write_eof()  # R-WIRE-9: the daemon answers what it has, then closes
    except (ConnectionError, OSError):
        return  # the daemon went away: `_down` sees its end


def _outgoing(line: bytes, pending: dict[bytes, Any], agent: str | None) -> bytes:
    """`line` as the daemon gets it; a request's id is remembered. A line that is no JSON goes as it is: the
    daemon answers it with a parse error."""
    try:
        frame = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line if line.endswith(b"\n") else line + b"\n"
    if isinstance(frame, dict) and isinstance(frame.get("method"), str):
        if "id" in frame:
            pending[orjson.dumps(frame["id"])] = frame["id"]
        params = frame.get("params") or {}
        if frame["method"] == "initialize" and isinstance(params, dict):
            meta = params.get("_meta")
            marker = {"agent": agent} if agent else {}
            params["_meta"] = {**meta, MARKER: marker} if isinstance(meta, dict) else {MARKER: marker}
            frame["params"] = params
            return orjson.dumps(frame) + b"\n"
    return line if line.endswith(b"\n") else line + b"\n"


async def _down(reader: asyncio.StreamReader, stdout: _Stdout, pending: dict[bytes, Any]) -> None:
    """The daemon's bytes to stdout as they come (one write per read); only the lines that may answer one of
    the editor's requests are parsed, never a notification."""
    rest = b""
    while data := await _read(reader):
        lines = (rest + data).split(b"\n") if rest or b"\n" in data else [data]
        rest = lines.pop()
        for line in lines:
            if not line.startswith(_NOTIFICATION):
                _answered(line, pending)
        stdout.write(data)
        await stdout.drain()
    if rest:
        stdout.write(b"\n")  # a line cut off by the daemon's end: the errors start anew


async def _read(reader: asyncio.StreamReader) -> bytes:
    """The next bytes from the daemon; b"" at its end, a reset included (the daemon went away)."""
    try:
        return await reader.read(READ_CHUNK)
    except (ConnectionError, OSError):
        return b""


def _answered(line: bytes, pending: dict[bytes, Any]) -> None:
    try:
        frame = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if isinstance(frame, dict) and "method" not in frame and "id" in frame:
        pending.pop(orjson.dumps(frame["id"]), None)


def _gone_error(rid: Any) -> bytes:
    error = {"code": _GONE, "message": "The zeroclaw daemon went away", "data": {"kind": "daemon_gone"}}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n"


# -- the daemon


async def _connect(
    config_dir: str | None, endpoint: str, started: _Started
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await open_endpoint(endpoint, limit=READ_LIMIT)
    except (FileNotFoundError, ConnectionRefusedError):
        pass
    except OSError as exc:  # another user's socket, say: starting a daemon would not help
        raise DaemonGone(f"cannot connect to {endpoint}: {exc.strerror or exc}") from None
    started.start(config_dir)
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while True:
        await asyncio.sleep(0.05)
        try:
            return await open_endpoint(endpoint, limit=READ_LIMIT)
        except (FileNotFoundError, ConnectionRefusedError):
            # Another client's daemon won the start (it holds the endpoint's lock): wait for its socket instead.
            if (why := started.failure()) is not None and ANOTHER_DAEMON not in why:
                raise DaemonGone(why) from None
            if time.monotonic() > deadline:
                raise DaemonGone(f"no daemon at {endpoint}, and `zeroclaw daemon --ephemeral` did not start") from None
        except OSError as exc:
            raise DaemonGone(f"cannot connect to {endpoint}: {exc.strerror or exc}") from None


class _Started:
    """The `zeroclaw daemon --ephemeral` this bridge started, if any (R-EPH-3), in a session of its own; stdout
    stays the editor's. Its stderr goes to an unnamed temporary file, so that when it exits before serving, its
    one line saying why reaches the user; at `--log-level warning`, the file stays small while it runs."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def start(self, config_dir: str | None) -> None:
        argv = [sys.executable, "-m", "app.cli", *(["--config-dir", config_dir] if config_dir else []), "daemon"]
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `close`; the daemon keeps its copy)
        self._process = subprocess.Popen(
            [*argv, "--ephemeral", "--log-level", "warning"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
            env=os.environ.copy(),
        )

    def failure(self, wait: float = 0.0) -> str | None:
        """The started daemon's last stderr line once it has exited with an error (None while it runs, or when
        none was started), waiting up to `wait` seconds for it to exit."""
        if self._process is None:
            return None
        try:
            status = self._process.wait(wait) if wait else self._process.poll()
        except subprocess.TimeoutExpired:
            return None
        if status is None or status == 0:
            return None
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().decode(errors="replace").splitlines() if line.strip()]
        if any(line.startswith(READY) for line in lines):
            return None  # it did start, and ended later: not a failure to start
        why = lines[-1] if lines else f"exited with status {status}"
        return f"no daemon was running, and the one started did not start: {why}"

    def close(self) -> None:
        if self._stderr is not None:
            self._stderr.close()


# -- stdio


async def _stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    except ValueError:  # a regular file: read it in a thread
        loop.run_in_executor(None, _feed, loop, reader)
    return reader


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    for line in sys.stdin.buffer:
        loop.call_soon_threadsafe(reader.feed_data, line)
    loop.call_soon_threadsafe(reader.feed_eof)


class _Stdout:
    """stdout, written whole lines at a time (blocking: an editor reads its agent's output)."""

    def __init__(self) -> None:
        self._out = sys.stdout.buffer

    def write(self, line: bytes) -> None:
        self._out.write(line)

    async def drain(self) -> None:
        self._out.flush()
