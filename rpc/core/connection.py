"""One peer's connection (R-WIRE-3..9, R-BIDI): its one way in, `receive(line)`, and its one way out, `send`.

A transport hands each frame to `receive`. The connection classifies it (`rpc.core.envelope`), admits a request
(`rpc.core.admission.Gate`), and runs it with `_run`: params validated, the handler called, and the answer sent at
once, or, when the handler has to wait, from the call's own task, kept in the in-flight table until answered.
Notifications run the same way and are never answered. Responses go to the daemon→client table
(`rpc.core.client_requests`). Whatever a call raises is answered through the error boundary (`rpc.core.boundary`).

`receive` declines a frame (returns False) while the connection is saturated: the transport keeps it and stops
reading until `resume()`. The in-flight entry of a request is removed exactly once, by its task's done callback,
and nothing answers an id that is not (or no longer) in the table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from contextlib import suppress
from functools import partial
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import orjson

from rpc.core.boundary import OTHER_METHOD, ErrorBoundary
from rpc.core.client_requests import ClientRequests
from rpc.core.context import Authority, Surface, Terminal
from rpc.core.dialect import Dialect
from rpc.core.envelope import (
    NO_ID,
    CallId,
    Id,
    Reject,
    Request,
    Response,
    classify,
    encode_error,
    encode_result,
    request_fields,
)
from rpc.core.errors import InternalError, InvalidRequest, ParseError, RpcError
from rpc.core.registry import AfterReply, MethodSpec
from rpc.transports.base import ConnectionClosed, FrameTransport, Peer

if TYPE_CHECKING:
    from rpc.core.admission import Gate
    from rpc.core.context import CallContext

__all__ = ["Connection"]

log = logging.getLogger("zeroclaw.rpc")

_PARSE_ERROR = encode_error(None, ParseError())
_loads = orjson.loads


class Connection:
    __slots__ = (
        "__weakref__",
        "_auth",
        "_client",
        "_errors",
        "_gate",
        "_on_closed",
        "authority",
        "background",
        "barrier",
        "capabilities",
        "closed",
        "context",
        "cut_off",
        "inflight",
        "max_inflight",
        "peer",
        "send",
        "sink",
        "surface",
        "terminal",
        "transport",
    )

    def __init__(
        self,
        transport: FrameTransport,
        peer: Peer,
        surface: Surface,
        gate: Gate,
        errors: ErrorBoundary,
        on_closed: Callable[[Connection], None],
        *,
        max_inflight: int,
        max_pending: int,
    ) -> None:
        self.transport = transport
        self.send = transport.send  # the one way out of every answer and error
        self.peer = peer
        self.surface = surface
        self.authority = Authority()
        self.capabilities: Mapping[str, Any] = {}
        self.terminal: Terminal | None = None  # a terminal client's identity and environment (never logged, R-ZC-6)
        self.max_inflight = max_inflight
        self.inflight: dict[Id, asyncio.Task[Any]] = {}  # requests taken, not yet answered
        self.background: set[asyncio.Task[Any]] = set()  # notification handlers: no id, no answer
        self.barrier = False  # `initialize` runs: nothing more is read until it is answered
        self.closed = False
        self.cut_off = False  # dropped for not reading (`outbound_stall_secs`)
        self.sink: object = None  # rpc.core.session_bridge.sink_for's, kept here so it dies with the connection
        self.context: CallContext  # set by the dispatcher that accepted it
        self._gate = gate
        self._auth = gate.auth
        self._errors = errors
        self._on_closed = on_closed
        self._client = ClientRequests(max_pending)

    @property
    def saturated(self) -> bool:
        """Stop reading: an in-flight slot is missing, `initialize` is running, or the peer is not reading."""
        return self.barrier or self.transport.writing_paused or len(self.inflight) >= self.max_inflight

    @property
    def idle(self) -> bool:
        """Nothing taken from the peer is still running (no request awaiting its answer, no notification)."""
        return not self.inflight and not self.background

    @property
    def input_closed(self) -> bool:
        """The peer can answer nothing more: it ended its sending side (R-WIRE-9) or is gone."""
        return self._client.ended

    # -- the way in

    def receive(self, line: bytes) -> bool:
        """Take one frame (JSON text; surrounding whitespace such as the NDJSON newline is allowed). False while
        the connection is saturated or closed: the transport keeps the frame and stops reading."""
        if self.barrier or self.transport.writing_paused or len(self.inflight) >= self.max_inflight or self.closed:
            return False
        try:
            frame = _loads(line)
        except orjson.JSONDecodeError:
            self._errors.answered[OTHER_METHOD, ParseError.kind] += 1
            self.send(_PARSE_ERROR)
            return True
        fields = request_fields(frame)
        if fields is not None:  # a plain request: the common case
            method, params, rid = fields
            authority = self.authority
            spec: MethodSpec[Any] | None = authority.admitted.get(method)
            if spec is not None and rid not in self.inflight and authority.generation == self._auth.generation:
                self._run(rid, spec, params)  # admitted before under the policy in force: skip the checks
                return True
        self._classified(classify(frame, line))
        return True

    def _classified(self, frame: Request | Response | Reject | None) -> None:
        if isinstance(frame, Request):
            self._request(frame)
        elif isinstance(frame, Response):
            self._client.answered(frame, self.peer.label)
        elif isinstance(frame, Reject):
            self._errors.answered[OTHER_METHOD, frame.error.data["kind"]] += 1
            self.send(encode_error(frame.id, frame.error))
        else:
            log.info("dropped a malformed response-shaped frame from %s", self.peer.label)

    def _request(self, request: Request) -> None:
        rid = request.id
        if rid is not NO_ID and rid in self.inflight:
            error = InvalidRequest("Request id already in flight", kind="duplicate_id", id=rid)
            self._errors.answered[self._label(request.method), "duplicate_id"] += 1
            self.send(encode_error(None, error))
            return
        try:
            spec = self._gate.admit(self.authority, self.surface, request.method)
        except RpcError as exc:
            if rid is not NO_ID:  # a notification is never answered, not even with an error
                self._fail(rid, exc, self._label(request.method))
            return
        self._run(rid, spec, request.params)

    # -- running a call

    def _run(self, rid: CallId, spec: MethodSpec[Any], params: object) -> None:
        """Validate the params and call the handler: a result is answered now; a coroutine (the handler has to
        wait) becomes the call's own task. `rid` is `NO_ID` for a notification: run for its effect alone."""
        handler, send = spec.handler, self.send  # attributes, not methods: called through locals (faster)
        try:
            result = handler(self.context, spec.params_from(params))
        except Exception as exc:
            if rid is not NO_ID:
                self._fail(rid, exc, spec.name)
            elif not isinstance(exc, RpcError):
                self._errors.to_rpc_error(exc)  # logs it under an error id
            return
        if type(result) is CoroutineType:
            self._start(rid, spec, result)
        elif rid is not NO_ID:
            spec.answered[0] += 1
            send(encode_result(rid, result))

    def _start(self, rid: CallId, spec: MethodSpec[Any], call: CoroutineType[Any, Any, Any]) -> None:
        loop = asyncio.get_running_loop()
        if rid is NO_ID:
            task = loop.create_task(call)
            self.background.add(task)
            task.add_done_callback(self._notification_done)
            return
        task = loop.create_task(self._answer_when_writable(call))
        self.inflight[rid] = task
        if spec.barrier:
            self.barrier = True
        task.add_done_callback(partial(self._finished, rid, spec, call))

    async def _answer_when_writable(self, call: CoroutineType[Any, Any, Any]) -> Any:
        """Await the handler; while the peer is not reading, its answer waits like streamed output does, so a few
        large answers at once stay within the outbound limit plus one frame (R-LIM)."""
        result = await call
        if self.transport.writing_paused:
            with suppress(ConnectionClosed):  # gone meanwhile: the answer goes nowhere, no failure of the call
                await self.transport.wait_writable()
        return result

    def _finished(
        self, rid: Id, spec: MethodSpec[Any], call: CoroutineType[Any, Any, Any], task: asyncio.Task[Any]
    ) -> None:
        if task.cancelled():
            call.close()  # cancelled before its first step: it never awaited the handler (no warning)
        if self.inflight.get(rid) is task:
            del self.inflight[rid]
        if spec.barrier:
            self.barrier = False
        if self.closed:
            return
        if task.cancelled():
            self._fail(rid, InternalError("The request was cancelled"), spec.name)
        elif (exc := task.exception()) is not None:
            self._fail(rid, exc, spec.name)
        else:
            spec.answered[0] += 1
            result = task.result()
            if isinstance(result, AfterReply):
                self.send(encode_result(rid, result.result))
                result.then()
            else:
                self.send(encode_result(rid, result))
        self.transport.resume()

    def _notification_done(self, task: asyncio.Task[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None and not isinstance(exc, RpcError):
            self._errors.to_rpc_error(exc)  # logs it under an error id
        if self.input_closed and not self.closed:
            self.transport.resume()  # after EOF the transport closes once nothing runs (R-WIRE-9)

    def _fail(self, rid: Id, exc: BaseException, method: str) -> None:
        error = self._errors.answer(exc, self.peer.label, self.authority.principal_id, method)
        self.send(encode_error(rid, error))

    def _label(self, method: str) -> str:
        """`method` as a metrics label: a name the peer chose is kept only if it is registered (bounded labels)."""
        return method if self._gate.knows(method) else OTHER_METHOD

    # -- ClientChannel: the daemon→client direction

    @property
    def answerable(self) -> bool:
        return not self.closed and not self.input_closed

    one_shot = False  # it may go away, and another client may answer what it was asked (R-MULTI-3)

    @property
    def principal_id(self) -> str | None:
        return self.authority.principal_id

    @property
    def dialect(self) -> Dialect:
        return self.authority.dialect

    async def send_encoded(self, frames: list[bytes]) -> None:
        """Send encoded notification frames in order, waiting while the peer is not reading (bounded outbound
        buffer)."""
        transport = self.transport
        if transport.writing_paused:
            await transport.wait_writable()
        if self.closed:
            raise ConnectionClosed
        transport.send_many(frames)

    async def request(self, method: str, params: Any, *, timeout: float, withdraw: str | None = None) -> Any:
        """Ask the client; raise `PeerError`, `TimeoutError`, `ConnectionClosed` or `PendingLimitReached`.
        `withdraw`: the notification telling the client when the question is taken back
        (`$/cancel_request`)."""
        return await self._client.ask(self.transport, method, params, timeout, withdraw)

    def when_gone(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the peer can answer nothing more: at EOF or disconnect, whichever comes first (at
        once if that is already so). What the daemon asked it (an approval, say) can then be settled at once."""
        self._client.when_gone(callback)

    def drop(self) -> None:
        """Close the connection (a watcher that fell behind what a session keeps for replay)."""
        self.transport.close()

    # -- the end

    def input_ended(self) -> None:
        """The peer ended its sending side (EOF, R-WIRE-9): what it sent is still answered, but what we asked it
        fails at once, as on disconnect."""
        if not self.closed:
            self._client.end()

    def stalled(self) -> None:
        """The transport cut the peer off for not reading (`FlowControl`'s stall rule)."""
        self.cut_off = True

    def lost(self) -> None:
        """The transport is gone (called once): cancel what runs for the peer, fail what waits on it, and leave
        the daemon's table."""
        if self.closed:
            return
        self.closed = True
        for task in (*self.inflight.values(), *self.background):
            task.cancel()
        self._client.end()
        self._on_closed(self)
        # Both hold this connection: dropped, it leaves no cycle for the GC (docs/limits.md "Garbage").
        # Calls still running hold their own context.
        del self.context
        self.sink = None
