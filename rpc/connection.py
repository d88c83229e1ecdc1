"""One peer: the inbound in-flight table, the outbound pending map and the call lifecycle (R-WIRE-5..7, R-BIDI).

The two directions never share a table (an id in flight both ways is fine, R-BIDI-2). Every request with an
id gets exactly one response: the in-flight entry is removed exactly once, by the task's done callback, and
nothing answers an id that is not (or no longer) in the table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from enum import Enum
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import orjson

from rpc.dispatcher import AfterReply, Call, MethodSpec
from rpc.envelope import (
    NO_ID,
    Id,
    Reject,
    Request,
    Response,
    classify,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    parse,
    request_fields,
)
from rpc.errors import AuthRequired, Forbidden, InternalError, InvalidRequest, ParseError, RpcError
from rpc.transports.base import ConnectionClosed, FrameTransport, Peer

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from rpc.server import RpcServer

__all__ = ["NOT_TAKEN", "Connection", "NotTaken", "PeerError", "PendingLimitReached"]

log = logging.getLogger("zeroclaw.rpc")

_PARSE_ERROR = encode_error(None, ParseError())
_loads = orjson.loads


class NotTaken(Enum):
    """What `Connection.take_frame` returns for a frame it cannot take yet (an enum, so type checkers narrow)."""

    NOT_TAKEN = 0


NOT_TAKEN: Final = NotTaken.NOT_TAKEN


class PeerError(Exception):
    """The client answered one of our requests with an error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__("client answered with an error")
        self.error = error


class PendingLimitReached(Exception):
    """Too many daemon→client requests already await an answer on this connection."""


class Connection:
    __slots__ = (
        "__weakref__",
        "_background",
        "_barrier",
        "_call",
        "_credential",
        "_gone_callbacks",
        "_inflight",
        "_max_inflight",
        "_next_out",
        "_pending",
        "_registry",
        "auth",
        "auth_generation",
        "cleared",
        "client_capabilities",
        "closed",
        "initialized",
        "input_closed",
        "peer",
        "principal",
        "server",
        "session_sink",
        "transport",
    )

    def __init__(self, server: RpcServer, transport: FrameTransport, peer: Peer, *, max_inflight: int) -> None:
        self.server = server
        self.transport = transport
        self.peer = peer
        self.initialized = False
        self.principal: Principal | None = None
        self.client_capabilities: dict[str, Any] = {}
        self._credential: Any = None
        self.auth_generation = -1  # the policy generation `principal` and `cleared` were decided under
        # Methods admitted under that generation, with their specs (see Registry.admit, Registry.admitted).
        self.cleared: dict[str, MethodSpec[Any]] = {}
        self._max_inflight = max_inflight
        self._inflight: dict[Id, asyncio.Task[Any]] = {}
        self._background: set[asyncio.Task[Any]] = set()  # notification handlers: no id, no answer
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._next_out = 0
        self._barrier = False
        self.closed = False
        self.input_closed = False  # the peer ended its sending side (R-WIRE-9): it can answer nothing more
        self._gone_callbacks: list[Callable[[], None]] = []
        self.session_sink: Any = None  # rpc.session_bridge.sink_for's, kept here so it dies with the connection
        self._call = Call(self)
        self.auth = server.services.auth
        self._registry = server.registry

    # -- inbound ---------------------------------------------------------------------------------------

    @property
    def saturated(self) -> bool:
        """Stop reading: an in-flight slot is missing, `initialize` is running, or the peer is not reading."""
        return self._barrier or self.transport.writing_paused or len(self._inflight) >= self._max_inflight

    def frames_received(self, lines: Sequence[bytes]) -> int:
        """Handle frames in order until the connection is saturated; returns how many were taken."""
        send = self.transport.send
        taken = 0
        for line in lines:
            answer = self.take_frame(line)
            if answer is NOT_TAKEN:
                break
            taken += 1
            if answer is not None:
                send(answer)
        return taken

    def take_frame(self, line: bytes) -> bytes | NotTaken | None:
        """Handle one frame (JSON text; surrounding whitespace such as the NDJSON newline is allowed).

        Returns `NOT_TAKEN` while the connection is saturated (or closed): the transport keeps the frame and
        stops reading. `envelope` decides what the frame is (`request_fields`, else `classify`). A request for
        a method this connection was already admitted to under the policy in force (see `Registry.admit`) goes
        straight to params validation and its handler, and the answer of a handler that does not suspend comes
        back encoded, for the transport to write (it saves a call and a buffer on every request). Every other
        frame goes through `_frame` and `Registry.admit`, which decide the same way; whatever it answers goes out
        through the transport, and None is returned.
        """
        if self._barrier or self.transport.writing_paused or len(self._inflight) >= self._max_inflight or self.closed:
            return NOT_TAKEN
        try:
            frame = _loads(line)
        except orjson.JSONDecodeError:
            self.transport.send(_PARSE_ERROR)
            return None
        fields = request_fields(frame)
        if fields is not None:
            method, params, rid = fields
            try:
                spec = self.cleared[method]
            except KeyError:
                spec = None
            if spec is not None and rid not in self._inflight and self.auth_generation == self.auth.generation:
                if spec.is_async:
                    self._execute(rid, spec, params)
                    return None
                handler = spec.handler  # called through a local: `spec.handler(...)` is an unspecialized lookup
                try:  # the inline branch of `_execute`, for its encoded answer
                    return encode_result(rid, handler(self._call, spec.params_from(params)))
                except Exception as exc:
                    self._send_error(rid, self.server.to_rpc_error(exc))
                    return None
        self._frame(classify(frame, line))
        return None

    def frame_received(self, line: bytes) -> None:
        """One frame from a message-oriented transport (the WebSocket)."""
        self._frame(parse(line))

    def _frame(self, frame: Request | Response | Reject | None) -> None:
        if isinstance(frame, Request):
            if frame.id is NO_ID:
                self._on_notification(frame)
            else:
                self._on_request(frame, frame.id)  # type: ignore[arg-type]  # narrowed: not NO_ID
        elif isinstance(frame, Response):
            self._on_response(frame)
        elif isinstance(frame, Reject):
            self.transport.send(encode_error(frame.id, frame.error))
        else:
            log.info("dropped a malformed response-shaped frame from %s", self.peer.label)

    def _on_request(self, request: Request, rid: Id) -> None:
        if rid in self._inflight:
            self._send_error(None, InvalidRequest("Request id already in flight", kind="duplicate_id", id=rid))
            return
        try:
            spec = self._registry.admit(self, request.method)
        except RpcError as exc:
            self._send_error(rid, exc)
            return
        self._execute(rid, spec, request.params)

    def _execute(self, rid: Id, spec: MethodSpec[Any], raw_params: object) -> None:
        """Validate the params of an admitted request, then run its handler inline or as its own task."""
        try:
            params = spec.params_from(raw_params)
            if not spec.is_async:
                result = spec.handler(self._call, params)
                self.transport.send(encode_result(rid, result))
                return
        except Exception as exc:
            self._send_error(rid, self.server.to_rpc_error(exc))
            return
        task = asyncio.get_running_loop().create_task(self._answer_when_writable(spec.handler, params))
        self._inflight[rid] = task
        if spec.barrier:
            self._barrier = True
        task.add_done_callback(partial(self._finished, rid, spec.barrier))

    async def _answer_when_writable(self, handler: Callable[[Call, Any], Awaitable[Any]], params: Any) -> Any:
        """Run an async handler; while the peer is not reading, its answer waits like streamed output does, so a
        few large answers at once do not pile up beyond the outbound limit (R-LIM: the limit plus one frame)."""
        result = await handler(self._call, params)
        if self.transport.writing_paused:
            # Dropped or closing meanwhile: the answer goes nowhere, which is no failure of the call.
            with suppress(ConnectionClosed):
                await self.transport.wait_writable()
        return result

    def _on_notification(self, request: Request) -> None:
        """Run it for its effect; nothing is ever answered, not even an error."""
        try:
            spec = self._registry.admit(self, request.method)
            params = spec.params_from(request.params)
            if not spec.is_async:
                spec.handler(self._call, params)
                return
        except RpcError:
            return
        except Exception as exc:
            self.server.to_rpc_error(exc)  # logs it under an error id
            return
        task = asyncio.get_running_loop().create_task(spec.handler(self._call, params))
        self._background.add(task)
        task.add_done_callback(self._notification_done)

    def _notification_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if self.input_closed and not self.closed:
            self.transport.resume()  # after EOF the transport closes once nothing runs (R-WIRE-9)

    @property
    def idle(self) -> bool:
        """Nothing taken from the peer is still running (no request awaiting its answer, no notification)."""
        return not self._inflight and not self._background

    def _finished(self, rid: Id, barrier: bool, task: asyncio.Task[Any]) -> None:
        if self._inflight.get(rid) is task:
            del self._inflight[rid]
        if barrier:
            self._barrier = False
        if self.closed:
            return
        if task.cancelled():
            self._send_error(rid, InternalError("The request was cancelled"))
        elif (exc := task.exception()) is not None:
            self._send_error(rid, self.server.to_rpc_error(exc))
        else:
            result = task.result()
            if isinstance(result, AfterReply):
                self.transport.send(encode_result(rid, result.result))
                result.then()
            else:
                self.transport.send(encode_result(rid, result))
        self.transport.resume()

    def _send_error(self, rid: Id, error: RpcError) -> None:
        if isinstance(error, AuthRequired | Forbidden):  # R-SEC-3: every -32010/-32012 answer is audited
            self.server.audit.record("denied", self.peer.label, self.principal_id)
        self.transport.send(encode_error(rid, error))

    # -- authorization ---------------------------------------------------------------------------------

    @property
    def principal_id(self) -> str | None:
        return self.principal.id if self.principal is not None else None

    def authenticated(self, credential: Any, principal: Principal) -> None:
        self._credential = credential
        self._act_as(principal)
        self.initialized = True

    def deauthenticate(self) -> None:
        self.cleared = {}  # never `.clear()`: the table may be shared (`Registry.admitted`)
        self._credential = None
        self.principal = None
        self.initialized = False

    def authorize(self, grant: str) -> None:
        """Check `grant` under the policy in force now; a changed policy re-resolves the principal first."""
        if self.auth_generation != self.auth.generation:
            self.cleared = {}
            principal = self.auth.refresh(self._credential)
            if principal is None:
                self.deauthenticate()
                raise AuthRequired("The credential of this connection is no longer valid")
            self._act_as(principal)
        assert self.principal is not None  # initialized implies a principal
        if not self.principal.has_grant(grant):
            raise Forbidden(f"Missing grant {grant}", grant=grant)

    def _act_as(self, principal: Principal) -> None:
        """Take `principal` under the policy generation in force, with the methods already admitted to it."""
        self.principal, self.auth_generation = principal, self.auth.generation
        self.cleared = self._registry.admitted(principal, self.peer.remote, self.auth_generation)

    # -- outbound --------------------------------------------------------------------------------------

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification, waiting while the peer is not reading (bounded outbound buffer)."""
        if self.closed:
            raise ConnectionClosed
        if self.transport.writing_paused:
            await self.transport.wait_writable()
        self.transport.send(encode_notification(method, params))

    async def request(self, method: str, params: Any, *, timeout: float) -> Any:
        """Ask the client; raise `PeerError`, `TimeoutError`, `ConnectionClosed` or `PendingLimitReached`."""
        if self.closed or self.input_closed:  # a peer that ended its input can never answer (R-WIRE-9)
            raise ConnectionClosed
        if len(self._pending) >= self.server.limits.max_pending_client_requests:
            raise PendingLimitReached
        rid = f"zc-out-{self._next_out}"
        self._next_out += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            self.transport.send(encode_request(rid, method, params))
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(rid, None)

    def _on_response(self, response: Response) -> None:
        future = self._pending.pop(response.id, None) if type(response.id) is str else None
        if future is None or future.done():
            log.info("ignored a response with an unknown id from %s", self.peer.label)
            return
        if response.error is not None:
            future.set_exception(PeerError(response.error))
        else:
            future.set_result(response.result)

    # -- teardown --------------------------------------------------------------------------------------

    def input_ended(self) -> None:
        """The peer ended its sending side (EOF, R-WIRE-9). What it sent is still answered, but it can answer
        nothing more: our pending requests to it fail at once, as on disconnect, and new ones fail too."""
        if self.input_closed or self.closed:
            return
        self.input_closed = True
        self._fail_pending()

    def connection_lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        for task in (*self._inflight.values(), *self._background):
            task.cancel()
        self._fail_pending()
        self.server.release(self)

    def when_gone(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the peer can answer nothing more: at EOF or disconnect, whichever comes first (at
        once if that is already so). What the daemon asked it (an approval, say) can then be settled at once."""
        if self.closed or self.input_closed:
            callback()
        else:
            self._gone_callbacks.append(callback)

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed())
        self._pending.clear()
        callbacks, self._gone_callbacks = self._gone_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("a callback for a connection that can no longer answer failed")
