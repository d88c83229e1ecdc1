"""The Windows named-pipe local transport (R-PATH-3, R-SEC-4, R-ARCH-1).

It serves the *same* `asyncio.Protocol` the Unix socket serves, so both local transports share one read/write
loop; only accepting differs. The accept loop mirrors CPython's `asyncio.windows_events.PipeServer` /
`ProactorEventLoop.start_serving_pipe`, with three changes:

* every instance is created with an explicit security descriptor (SYSTEM + the creating user only; asyncio
  passes NULL, whose default DACL lets every user in) and `PIPE_REJECT_REMOTE_CLIENTS`;
* the first instance uses `FILE_FLAG_FIRST_PIPE_INSTANCE`, so if anyone (another daemon, or a squatter of any
  user) already owns the name we fail loudly instead of silently joining their pipe;
* byte mode rather than message mode: the stream carries NDJSON, exactly like the socket.

Win32 calls go through `Win32PipeApi` and the proactor internals through `PipeAccepter`, so the loop runs on
Linux in unit tests with fakes; the real implementations are created lazily and only on Windows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from app.paths import pipe_name
from rpc.transports.base import Peer
from rpc.transports.win_security import (
    ERROR_ACCESS_DENIED,
    ERROR_PIPE_BUSY,
    FILE_FLAG_FIRST_PIPE_INSTANCE,
    FILE_FLAG_OVERLAPPED,
    PIPE_ACCESS_DUPLEX,
    PIPE_READMODE_BYTE,
    PIPE_REJECT_REMOTE_CLIENTS,
    PIPE_TYPE_BYTE,
    PIPE_UNLIMITED_INSTANCES,
    PIPE_WAIT,
    Win32PipeApi,
    build_sddl,
)

__all__ = [
    "PEER_LABEL",
    "PipeAccepter",
    "PipeEndpointError",
    "PipeHandle",
    "PipeServer",
    "ProactorAccepter",
    "Win32PipeApi",
    "build_sddl",
    "pipe_name_for",
    "pipe_peer",
    "serve_pipe",
]

log = logging.getLogger(__name__)

PEER_LABEL = "pipe:local"  # R-SEC-3: the OS tells a pipe server nothing we log about the peer
PIPE_PREFIX = "\\\\.\\pipe\\zeroclaw-"
OPEN_MODE = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED
PIPE_MODE = PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS
BUFFER_SIZE = 64 * 1024  # a kernel quota hint only; frames larger than this stream through fine
_RETRY_MIN, _RETRY_MAX = 0.05, 2.0  # back-off when instances cannot be created or accepts keep failing


def pipe_peer(transport: asyncio.BaseTransport) -> Peer:
    """The peer of a pipe connection (the `peer_of` of `NdjsonProtocol`): the OS tells us no pid or uid; the DACL
    lets only this user and SYSTEM in, so `initialize` takes it as the owner, as for a 0600 socket."""
    return Peer(PEER_LABEL)


def pipe_name_for(data_dir: Path) -> str:
    r"""The default Windows endpoint for `data_dir` (R-PATH-3); one definition, in `app.paths.pipe_name`."""
    return pipe_name(data_dir)


class PipeEndpointError(OSError):
    """The pipe could not be created; the message names the pipe. `in_use` when someone already owns it."""

    def __init__(self, name: str, message: str, *, in_use: bool) -> None:
        super().__init__(message)
        self.pipe_name = name
        self.in_use = in_use


class PipeHandle:
    """One pipe instance's handle, shaped like `asyncio.windows_utils.PipeHandle` (what the proactor and its
    transports use: `fileno()` and `close()`), but closing through the injected API so tests can see it."""

    def __init__(self, api: Win32PipeApi, handle: int) -> None:
        self._api = api
        self._handle: int | None = handle

    @property
    def handle(self) -> int | None:
        return self._handle

    def fileno(self) -> int:
        return -1 if self._handle is None else self._handle

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            self._api.close_handle(handle)

    def __repr__(self) -> str:
        return f"<PipeHandle {self._handle!r}>"


class PipeAccepter(Protocol):
    """Waiting for a client on one instance, and wrapping a connected instance in a transport."""

    async def accept(self, pipe: PipeHandle) -> None:
        """Return once a client is connected to `pipe` (ConnectNamedPipe); `BrokenPipeError` if it left."""
        ...

    def make_transport(
        self, pipe: PipeHandle, protocol: asyncio.Protocol, extra: dict[str, Any]
    ) -> asyncio.BaseTransport: ...


class ProactorAccepter:
    """The real `PipeAccepter`: the IOCP proactor behind asyncio's Windows default event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        if not hasattr(loop, "_proactor") or not hasattr(loop, "_make_duplex_pipe_transport"):
            raise RuntimeError("the named-pipe transport needs asyncio's ProactorEventLoop (the Windows default)")
        self._loop: Any = loop  # private asyncio API, the same calls start_serving_pipe makes

    async def accept(self, pipe: PipeHandle) -> None:
        await self._loop._proactor.accept_pipe(pipe)

    def make_transport(
        self, pipe: PipeHandle, protocol: asyncio.Protocol, extra: dict[str, Any]
    ) -> asyncio.BaseTransport:
        transport: asyncio.BaseTransport = self._loop._make_duplex_pipe_transport(pipe, protocol, extra=extra)
        return transport


class PipeServer:
    """A listening named pipe: always one unconnected instance waiting, each client on its own instance."""

    def __init__(
        self,
        name: str,
        protocol_factory: Callable[[], asyncio.Protocol],
        api: Win32PipeApi,
        accepter: PipeAccepter,
        attributes: object,
    ) -> None:
        self._name = name
        self._protocol_factory = protocol_factory
        self._api = api
        self._accepter = accepter
        self._attributes: object | None = attributes
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._listening: PipeHandle | None = self._create(first=True)

    @property
    def name(self) -> str:
        return self._name

    def is_serving(self) -> bool:
        return not self._closing

    def close(self) -> None:
        """Stop accepting: the listening instance is closed now; connected clients keep their transports."""
        if self._closing:
            return
        self._closing = True
        if self._task is not None:
            self._task.cancel()  # cancels the pending ConnectNamedPipe before its handle goes
        self._close_listening()
        if self._attributes is not None:
            self._api.free_security_attributes(self._attributes)
            self._attributes = None

    async def wait_closed(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._task = loop.create_task(self._serve(), name=f"pipe-accept {self._name}")

    def _create(self, *, first: bool) -> PipeHandle:
        assert self._attributes is not None
        open_mode = OPEN_MODE | (FILE_FLAG_FIRST_PIPE_INSTANCE if first else 0)
        handle = self._api.create_named_pipe(
            self._name,
            open_mode,
            PIPE_MODE,
            PIPE_UNLIMITED_INSTANCES,
            BUFFER_SIZE,
            BUFFER_SIZE,
            0,
            self._attributes,
        )
        return PipeHandle(self._api, handle)

    def _close_listening(self) -> None:
        pipe, self._listening = self._listening, None
        if pipe is not None:
            pipe.close()

    async def _serve(self) -> None:
        delay = _RETRY_MIN
        try:
            while not self._closing:
                try:
                    if self._listening is None:
                        self._listening = self._create(first=False)
                    pipe = self._listening
                    await self._accepter.accept(pipe)
                except BrokenPipeError:  # the client gave up before we accepted it: routine
                    self._close_listening()
                    continue
                except OSError as exc:
                    log.warning("named pipe %s: cannot listen (%s); retrying", self._name, exc.strerror or exc)
                    self._close_listening()
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _RETRY_MAX)
                    continue
                delay = _RETRY_MIN
                self._listening = None
                # The next instance exists before this client is served, so the name never vanishes; if it
                # cannot be created now, the top of the loop retries (and logs) with back-off.
                with contextlib.suppress(OSError):
                    self._listening = self._create(first=False)
                self._hand_off(pipe)
        finally:
            self._close_listening()

    def _hand_off(self, pipe: PipeHandle) -> None:
        try:
            protocol = self._protocol_factory()
            self._accepter.make_transport(pipe, protocol, {"addr": self._name, "peer": PEER_LABEL})
        except Exception:
            log.exception("named pipe %s: could not start serving a client", self._name)
            pipe.close()


def _default_api() -> Win32PipeApi:
    if sys.platform == "win32":
        from rpc.transports.win_security import CtypesWin32PipeApi

        return CtypesWin32PipeApi()
    raise RuntimeError("named pipes exist only on Windows (pass api= to drive the server with a fake)")


async def serve_pipe(
    name: str,
    protocol_factory: Callable[[], asyncio.Protocol],
    *,
    api: Win32PipeApi | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    accepter: PipeAccepter | None = None,
) -> PipeServer:
    """Listen on the named pipe `name`, serving each client with a fresh `protocol_factory()` protocol.

    Raises `PipeEndpointError` naming the pipe if the first instance cannot be created, e.g. because another
    daemon (or any other process) already owns the name.
    """
    loop = loop or asyncio.get_running_loop()
    api = api or _default_api()
    accepter = accepter or ProactorAccepter(loop)
    attributes = api.security_attributes(build_sddl(api.current_user_sid()))
    try:
        server = PipeServer(name, protocol_factory, api, accepter, attributes)
    except OSError as exc:
        api.free_security_attributes(attributes)
        code = getattr(exc, "winerror", None)
        if code in (ERROR_ACCESS_DENIED, ERROR_PIPE_BUSY):
            raise PipeEndpointError(
                name, f"named pipe {name} is already in use (another zeroclaw daemon?)", in_use=True
            ) from exc
        raise PipeEndpointError(name, f"cannot create named pipe {name}: {exc.strerror or exc}", in_use=False) from exc
    server._start(loop)
    return server
