"""The dispatcher: every call on every surface goes bytes → transport → here → handler → here → transport.

One `Dispatcher` serves the daemon. It accepts peers (the connection cap), classifies their frames (`envelope`),
admits each request (`rpc.admission`: method, initialized, local-only, grant), validates its params, runs its
handler inline (a plain function) or as its own task (a coroutine function, or the coroutine a plain function
returned because it has to wait this time: `rpc.registry`), keeps the in-flight table that gives
every request with an id exactly one answer, routes responses to the connection's pending requests, and turns
whatever a handler raises into the one error it answers (`rpc.boundary`, which also audits refusals). HTTP routes
call `call()`, the same pipeline without a connection (R-ARCH-3).

The in-flight entry of a request is removed exactly once, by its task's done callback, and nothing answers an id
that is not (or no longer) in the table.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from enum import Enum
from functools import partial
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

import orjson

from rpc.admission import Admissions, admit, check_surface, require_grant
from rpc.boundary import ErrorBoundary, ErrorMapper
from rpc.connection import Connection
from rpc.context import Authority, CallContext, NoClient, Surface, Terminal, Traffic
from rpc.dialect import Dialect
from rpc.envelope import (
    NO_ID,
    Id,
    Reject,
    Request,
    Response,
    classify,
    encode_error,
    encode_result,
    parse,
    request_fields,
)
from rpc.errors import AuthRequired, InternalError, InvalidRequest, LimitExceeded, MethodNotFound, ParseError, RpcError
from rpc.registry import AfterReply, MethodSpec, Registry
from rpc.transports.base import ConnectionClosed, FrameTransport, Peer

if TYPE_CHECKING:
    from app.audit import AuditLog
    from app.auth.policy import Principal
    from app.config.schema import Limits
    from app.services import Services

__all__ = ["NOT_TAKEN", "Dispatcher", "NotTaken"]

log = logging.getLogger("zeroclaw.rpc")

_PARSE_ERROR = encode_error(None, ParseError())
_loads = orjson.loads
OTHER_METHOD: Final = "other"  # the `method` label of an error for a frame that named no registered method


class NotTaken(Enum):
    """What `Dispatcher.take_frame` returns for a frame it cannot take yet (an enum, so type checkers narrow)."""

    NOT_TAKEN = 0


NOT_TAKEN: Final = NotTaken.NOT_TAKEN


class Dispatcher:
    def __init__(
        self,
        registry: Registry,
        services: Services,
        audit: AuditLog,
        *,
        limits: Callable[[], Limits],
        on_count_change: Callable[[int], None] = lambda _count: None,
    ) -> None:
        self.registry = registry
        self.services = services
        self.audit = audit
        self.errors = ErrorBoundary(audit)
        self._limits = limits
        self._on_count_change = on_count_change
        self._admissions = Admissions()
        self._close_listeners: list[Callable[[Connection], None]] = []
        self.connections: set[Connection] = set()
        # What `traffic()` reports (GET /metrics) besides the answers counted on each spec (`MethodSpec.answered`).
        self._errors: Counter[tuple[str, str]] = Counter()
        self._http_inflight = 0
        self._stalls = 0

    # -- the daemon's view ---------------------------------------------------------------------------------

    @property
    def limits(self) -> Limits:
        """The limits in force now (config changes apply to the next connection or call)."""
        return self._limits()

    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def method_names(self) -> list[str]:
        return self.registry.names()

    def tui_env(self, tui_id: str, principal_id: str) -> Mapping[str, str] | None:
        """The environment the open terminal `tui_id` of `principal_id` handed over at `initialize` (R-ZC-6).
        Another principal's terminal is never found: its environment is its own."""
        for connection in self.connections:
            terminal = connection.terminal
            if terminal is not None and terminal.tui_id == tui_id and connection.principal_id == principal_id:
                return terminal.env
        return None

    def add_error_mapper(self, mapper: ErrorMapper) -> None:
        self.errors.add_mapper(mapper)

    def to_rpc_error(self, exc: BaseException) -> RpcError:
        return self.errors.to_rpc_error(exc)

    def add_close_listener(self, listener: Callable[[Connection], None]) -> None:
        """Run `listener(connection)` when a connection ends (e.g. to discard what it staged)."""
        self._close_listeners.append(listener)

    def close_all(self) -> None:
        for connection in list(self.connections):
            connection.transport.close()

    def peer_stalled(self) -> None:
        """A transport cut its peer off for not reading (`FlowControl`'s stall rule)."""
        self._stalls += 1

    def traffic(self) -> Traffic:
        """The counters and gauges of `GET /metrics`, summed now (O(connections))."""
        connections: Counter[str] = Counter()
        inflight = self._http_inflight
        queued = 0
        for connection in self.connections:
            connections[connection.surface.value] += 1
            inflight += len(connection.inflight)
            queued += connection.transport.queued_bytes()
        answers = {(method, "ok"): count for method, count in self.registry.answered().items()}
        answers.update(self._errors)
        return Traffic(dict(connections), answers, inflight, queued, self._stalls)

    # -- peers ---------------------------------------------------------------------------------------------

    def accept(self, transport: FrameTransport, peer: Peer) -> Connection | None:
        """A new peer, or None when the connection cap refused it (one error frame, then closed)."""
        limits = self.limits
        if len(self.connections) >= limits.max_connections:
            refusal = LimitExceeded("Too many connections", name="connections", limit=limits.max_connections)
            transport.send(encode_error(None, refusal))
            transport.close()
            self.audit.record("denied", peer.label, None)
            return None
        surface = Surface.WEBSOCKET if peer.remote else Surface.LOCAL
        connection = Connection(
            transport,
            peer,
            surface,
            max_inflight=limits.max_inflight_per_connection,
            max_pending=limits.max_pending_client_requests,
        )
        authority = connection.authority
        connection.context = CallContext(
            self.services,
            self,
            surface,
            peer,
            authority,
            connection,
            partial(self._recheck, authority, surface),
            partial(self._sign_in, connection),
        )
        self.connections.add(connection)
        self.audit.record("connect", peer.label, None)
        self._on_count_change(len(self.connections))
        return connection

    def input_ended(self, connection: Connection) -> None:
        connection.input_ended()

    def connection_lost(self, connection: Connection) -> None:
        if not connection.lost() or connection not in self.connections:
            return
        self.connections.discard(connection)
        for listener in self._close_listeners:
            listener(connection)
        self.audit.record("disconnect", connection.peer.label, connection.authority.principal_id)
        self._on_count_change(len(self.connections))
        connection.release()

    # -- inbound frames ------------------------------------------------------------------------------------

    def frames_received(self, connection: Connection, lines: Sequence[bytes]) -> int:
        """Handle frames in order until the connection is saturated; returns how many were taken."""
        send = connection.transport.send
        taken = 0
        for line in lines:
            answer = self.take_frame(connection, line)
            if answer is NOT_TAKEN:
                break
            taken += 1
            if answer is not None:
                send(answer)
        return taken

    def take_frame(self, connection: Connection, line: bytes) -> bytes | NotTaken | None:
        """Handle one frame (JSON text; surrounding whitespace such as the NDJSON newline is allowed).

        Returns `NOT_TAKEN` while the connection is saturated (or closed): the transport keeps the frame and
        stops reading. A request for a method this connection was already admitted to under the policy in force
        (`Admissions`) goes straight to params validation and its handler, and the answer of a handler that does
        not suspend comes back encoded, for the transport to write (benchmarks/README.md, ping-pong). Every other
        frame goes through `_frame`, which decides the same way and sends what it answers itself.
        """
        transport = connection.transport
        if (
            connection.barrier
            or transport.writing_paused
            or len(connection.inflight) >= connection.max_inflight
            or connection.closed
        ):
            return NOT_TAKEN
        try:
            frame = _loads(line)
        except orjson.JSONDecodeError:
            self._errors[OTHER_METHOD, ParseError.kind] += 1
            transport.send(_PARSE_ERROR)
            return None
        fields = request_fields(frame)
        if fields is not None:
            method, params, rid = fields
            authority = connection.authority
            spec: MethodSpec[Any] | None = authority.cleared.get(method)
            if (
                spec is not None
                and rid not in connection.inflight
                and authority.generation == self.services.auth.generation
            ):
                if spec.is_async:
                    self._execute(connection, rid, spec, params)
                    return None
                handler = spec.handler  # called through a local: `spec.handler(...)` is an unspecialized lookup
                try:  # the inline branch of `_execute`, for its encoded answer
                    result = handler(connection.context, spec.params_from(params))
                    if type(result) is CoroutineType:
                        self._start(connection, rid, spec, result)
                        return None
                    answer = encode_result(rid, result)
                except Exception as exc:
                    self._send_error(connection, rid, exc, method)
                    return None
                spec.answered[0] += 1
                return answer
        self._frame(connection, classify(frame, line))
        return None

    def frame_received(self, connection: Connection, line: bytes) -> None:
        """One frame from a message-oriented transport (the WebSocket)."""
        self._frame(connection, parse(line))

    def _frame(self, connection: Connection, frame: Request | Response | Reject | None) -> None:
        if isinstance(frame, Request):
            if frame.id is NO_ID:
                self._on_notification(connection, frame)
            else:
                self._on_request(connection, frame, frame.id)  # type: ignore[arg-type]  # narrowed: not NO_ID
        elif isinstance(frame, Response):
            connection.response_received(frame)
        elif isinstance(frame, Reject):
            self._errors[OTHER_METHOD, frame.error.data["kind"]] += 1
            connection.transport.send(encode_error(frame.id, frame.error))
        else:
            log.info("dropped a malformed response-shaped frame from %s", connection.peer.label)

    def _on_request(self, connection: Connection, request: Request, rid: Id) -> None:
        method = request.method
        if rid in connection.inflight:
            error = InvalidRequest("Request id already in flight", kind="duplicate_id", id=rid)
            self._errors[self._label(method), "duplicate_id"] += 1
            connection.transport.send(encode_error(None, error))
            return
        try:
            spec = self._admit(connection, method)
        except RpcError as exc:
            self._send_error(connection, rid, exc, self._label(method))
            return
        self._execute(connection, rid, spec, request.params)

    def _on_notification(self, connection: Connection, request: Request) -> None:
        """Run it for its effect; nothing is ever answered, not even an error."""
        try:
            spec = self._admit(connection, request.method)
            params = spec.params_from(request.params)
            result = spec.handler(connection.context, params)
            if type(result) is not CoroutineType:
                return
        except RpcError:
            return
        except Exception as exc:
            self.errors.to_rpc_error(exc)  # logs it under an error id
            return
        task = asyncio.get_running_loop().create_task(result)
        connection.background.add(task)
        task.add_done_callback(partial(self._notification_done, connection))

    def _notification_done(self, connection: Connection, task: asyncio.Task[Any]) -> None:
        connection.background.discard(task)
        if connection.input_closed and not connection.closed:
            connection.transport.resume()  # after EOF the transport closes once nothing runs (R-WIRE-9)

    # -- admission -----------------------------------------------------------------------------------------

    def _admit(self, connection: Connection, method: str) -> MethodSpec[Any]:
        """The method's spec, once `admit` let this connection's caller run it; remembered for the policy in force."""
        spec = self.registry.get(method)
        if spec is None:
            raise MethodNotFound
        authority = connection.authority
        dialect = authority.dialect
        adapted = dialect.adapt(spec)  # the entry itself unless the dialect shapes this method (rpc/zerocode.py)
        admitted: MethodSpec[Any] | None = authority.cleared.get(method)
        if admitted is adapted and authority.generation == self.services.auth.generation:
            return adapted
        check_surface(spec, authority.initialized, connection.surface)
        if spec.grant is not None:  # `admit`'s last step, once the credential is current
            require_grant(self._current(authority, connection.surface), spec.grant)
        if authority.initialized:
            authority.cleared[method] = adapted
        return adapted

    def _current(self, authority: Authority, surface: Surface) -> Principal:
        """The caller under the policy in force now: a changed policy re-resolves the credential first."""
        auth = self.services.auth
        if authority.generation != auth.generation:
            principal = auth.refresh(authority.credential)  # type: ignore[arg-type]  # what `sign_in` stored
            if principal is None:
                authority.sign_out()
                raise AuthRequired("The credential of this connection is no longer valid")
            table = self._admissions.table(principal, surface, auth.generation, authority.dialect)
            authority.act_as(principal, auth.generation, table)
        assert authority.principal is not None  # signed in implies a principal
        return authority.principal

    def _recheck(self, authority: Authority, surface: Surface, grant: str) -> Principal:
        principal = self._current(authority, surface)
        require_grant(principal, grant)
        return principal

    def _sign_in(
        self,
        connection: Connection,
        credential: object,
        principal: Principal,
        capabilities: Mapping[str, Any],
        dialect: Dialect,
        terminal: Terminal | None,
    ) -> None:
        """`initialize` authenticated the peer as `principal`, under the policy in force now, speaking `dialect`."""
        generation = self.services.auth.generation
        table = self._admissions.table(principal, connection.surface, generation, dialect)
        connection.authority.sign_in(credential, principal, generation, table, dialect)
        connection.capabilities = capabilities
        connection.terminal = terminal

    # -- running a call ------------------------------------------------------------------------------------

    def _execute(self, connection: Connection, rid: Id, spec: MethodSpec[Any], raw_params: object) -> None:
        """Validate the params of an admitted request, then run its handler inline or as its own task."""
        try:
            result = spec.handler(connection.context, spec.params_from(raw_params))
            if type(result) is not CoroutineType:
                connection.transport.send(encode_result(rid, result))
                spec.answered[0] += 1
                return
        except Exception as exc:
            self._send_error(connection, rid, exc, spec.name)
            return
        self._start(connection, rid, spec, result)

    def _start(
        self, connection: Connection, rid: Id, spec: MethodSpec[Any], call: CoroutineType[Any, Any, Any]
    ) -> None:
        """Run a handler's coroutine as the request's own task, in the in-flight table until it is answered."""
        task = asyncio.get_running_loop().create_task(self._answer_when_writable(connection, call))
        connection.inflight[rid] = task
        if spec.barrier:
            connection.barrier = True
        task.add_done_callback(partial(self._finished, connection, rid, spec, call))

    async def _answer_when_writable(self, connection: Connection, call: Awaitable[Any]) -> Any:
        """Await a handler's coroutine; while the peer is not reading, its answer waits like streamed output does,
        so a few large answers at once do not pile up beyond the outbound limit (R-LIM: the limit plus one frame)."""
        result = await call
        if connection.transport.writing_paused:
            # Dropped or closing meanwhile: the answer goes nowhere, which is no failure of the call.
            with suppress(ConnectionClosed):
                await connection.transport.wait_writable()
        return result

    def _finished(
        self,
        connection: Connection,
        rid: Id,
        spec: MethodSpec[Any],
        call: CoroutineType[Any, Any, Any],
        task: asyncio.Task[Any],
    ) -> None:
        if task.cancelled():
            call.close()  # a task cancelled before its first step never awaited it (no "never awaited" warning)
        if connection.inflight.get(rid) is task:
            del connection.inflight[rid]
        if spec.barrier:
            connection.barrier = False
        if connection.closed:
            return
        transport = connection.transport
        if task.cancelled():
            self._send_error(connection, rid, InternalError("The request was cancelled"), spec.name)
        elif (exc := task.exception()) is not None:
            self._send_error(connection, rid, exc, spec.name)
        else:
            spec.answered[0] += 1
            result = task.result()
            if isinstance(result, AfterReply):
                transport.send(encode_result(rid, result.result))
                result.then()
            else:
                transport.send(encode_result(rid, result))
        transport.resume()

    def _send_error(self, connection: Connection, rid: Id, exc: BaseException, method: str) -> None:
        error = self.errors.answer(exc, connection.peer.label, connection.authority.principal_id)
        self._errors[method, error.data["kind"]] += 1
        connection.transport.send(encode_error(rid, error))

    def _label(self, method: str) -> str:
        """`method` as a metrics label: a name the peer chose is kept only if it is registered (bounded labels)."""
        return method if self.registry.get(method) is not None else OTHER_METHOD

    # -- HTTP routes ---------------------------------------------------------------------------------------

    def http_context(self, peer: Peer, credential: object, principal: Principal) -> CallContext:
        """The context of one HTTP request by the holder of a bearer token (R-ARCH-3)."""
        authority = Authority()
        generation = self.services.auth.generation
        authority.sign_in(credential, principal, generation, {})
        surface = Surface.HTTP
        client = NoClient(principal.id)
        return CallContext(
            self.services, self, surface, peer, authority, client, partial(self._recheck, authority, surface), _signed
        )

    def admit(self, method: str, context: CallContext) -> MethodSpec[Any]:
        """Admit an HTTP caller to `method` before a route does its own work around the call (refusals audited)."""
        spec = self.registry.get(method)
        if spec is None:
            raise LookupError(f"no RPC method {method!r}")  # a route naming a method that does not exist
        authority = context.authority
        try:
            admit(spec, self._current(authority, context.surface), context.surface)
        except RpcError as exc:
            error = self.errors.answer(exc, context.peer.label, authority.principal_id)
            self._errors[method, error.data["kind"]] += 1
            raise error from None
        return spec

    async def call(self, method: str, params: object, context: CallContext, *, query: bool = False) -> Any:
        """Run `method` for an HTTP route: the same admission, params model, handler and error boundary as a
        JSON-RPC request. Raises the `RpcError` the request would have been answered with (refusals audited).
        `query`: the params are a query string's, so strings become the numbers and booleans the model takes."""
        spec = self.admit(method, context)
        try:
            result = spec.handler(context, spec.params_from(params, strict=not query))
            if inspect.isawaitable(result):
                self._http_inflight += 1  # only a call that suspends can be seen running (a scrape: not itself)
                try:
                    result = await result
                finally:
                    self._http_inflight -= 1
        except Exception as exc:
            error = self.errors.answer(exc, context.peer.label, context.authority.principal_id)
            self._errors[method, error.data["kind"]] += 1
            raise error from None
        spec.answered[0] += 1
        # An effect after the answer (`AfterReply.then`) is a connection's subscription: an HTTP caller has none.
        return result.result if isinstance(result, AfterReply) else result


def _signed(
    credential: object, principal: Principal, capabilities: Mapping[str, Any], dialect: Dialect, terminal: object
) -> None:
    raise RuntimeError("an HTTP caller is signed in by its bearer token, not by `initialize`")
