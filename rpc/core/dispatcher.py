"""The dispatcher's daemon-wide half: every surface's calls meet here (R-ARCH-1..3; docs/call-path.md).

`Dispatcher` accepts peers under the connection cap and makes each a `Connection` (`rpc.core.connection`: the one way
in and out of a peer's frames); it owns what all connections share: the registry, admission with its memo
(`rpc.core.admission.Gate`), the error boundary and its counts (`rpc.core.boundary`), the open-connection table that the
metrics and terminal look-ups read. HTTP routes call `call()`: the same admission, params model, handler and
error boundary as a JSON-RPC request, without a connection. Handlers see none of this: they get a `DaemonView`.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from rpc.core.admission import Gate
from rpc.core.boundary import ErrorBoundary
from rpc.core.connection import Connection
from rpc.core.context import Authority, CallContext, NoClient, Surface, Traffic
from rpc.core.dialect import STANDARD, Dialect
from rpc.core.envelope import encode_error
from rpc.core.errors import InvalidRequest, LimitExceeded, MethodNotFound, ParseError, RpcError
from rpc.core.registry import AfterReply, MethodSpec, Registry
from rpc.transports.base import FrameTransport, Peer, Refusal

if TYPE_CHECKING:
    from app.audit import AuditLog
    from app.auth.policy import Principal
    from app.config.schema import Limits
    from app.services import Services
    from rpc.core.context import Terminal

__all__ = ["DaemonState", "Dispatcher"]


class Dispatcher:
    def __init__(
        self,
        registry: Registry,
        services: Services,
        audit: AuditLog,
        *,
        limits: Callable[[], Limits],
        on_count_change: Callable[[int], None] = lambda _count: None,
        dialects: Sequence[Dialect] = (),
        contract: Callable[[Registry, Services], bytes] | None = None,
    ) -> None:
        """`dialects`: those an `initialize` may ask for besides the standard one (the composition root's table,
        `rpc.dialects.DIALECTS`); `contract`: the OpenRPC document `rpc.discover` answers (`rpc.contract`)."""
        self.registry = registry
        self.services = services
        self.audit = audit
        self.errors = ErrorBoundary(audit)
        self.gate = Gate(registry, services.auth)
        described = partial(contract, registry, services) if contract is not None else None
        self.state = DaemonState(registry, self.errors, tuple(dialects), described)
        self._limits = limits
        self._on_count_change = on_count_change

    @property
    def limits(self) -> Limits:
        """The limits in force now (config changes apply to the next connection or call)."""
        return self._limits()

    # -- connections

    @property
    def connections(self) -> set[Connection]:
        return self.state.connections

    def accept(self, transport: FrameTransport, peer: Peer) -> Connection | None:
        """A new peer, or None when the connection cap refused it (one error frame, then closed)."""
        limits = self.limits
        if len(self.state.connections) >= limits.max_connections:
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
            self.gate,
            self.errors,
            self._closed,
            max_inflight=limits.max_inflight_per_connection,
            max_pending=limits.max_pending_client_requests,
        )
        authority = connection.authority
        connection.context = CallContext(
            self.services,
            self.state,
            surface,
            peer,
            authority,
            connection,
            partial(self.gate.recheck, authority, surface),
            partial(_sign_in, self.gate, connection),
        )
        self.state.connections.add(connection)
        self.audit.record("connect", peer.label, None)
        self._on_count_change(len(self.state.connections))
        return connection

    def refusal(self, reason: Refusal, limit: int) -> bytes:
        """The error frame a transport sends for a frame it cannot hand over (`rpc.transports.base.Acceptor`)."""
        if reason == "not_text":  # R-WIRE-1: JSON-RPC travels in text frames; a binary one reads as undecodable
            return encode_error(None, ParseError("Parse error: send each JSON-RPC message as a text frame"))
        return encode_error(None, InvalidRequest("Frame too large", kind="frame_too_large", limit=limit))

    def _closed(self, connection: Connection) -> None:
        state = self.state
        state.connections.discard(connection)
        state.stalls += connection.cut_off
        for listener in state.close_listeners:
            listener(connection)
        self.audit.record("disconnect", connection.peer.label, connection.authority.principal_id)
        self._on_count_change(len(state.connections))

    def close_all(self) -> None:
        for connection in list(self.state.connections):
            connection.transport.close()

    def traffic(self) -> Traffic:
        return self.state.traffic()

    # -- HTTP routes

    def http_context(self, peer: Peer, credential: object, principal: Principal) -> CallContext:
        """The context of one HTTP request by the holder of a bearer token (R-ARCH-3)."""
        authority = Authority()
        authority.sign_in(credential, principal, self.gate.auth.generation, {})
        surface = Surface.HTTP
        recheck = partial(self.gate.recheck, authority, surface)
        client = NoClient(principal.id)
        return CallContext(self.services, self.state, surface, peer, authority, client, recheck, _signed)

    def admit(self, method: str, context: CallContext) -> MethodSpec[Any]:
        """Admit an HTTP caller to `method` before a route does its own work around the call (refusals audited)."""
        try:
            return self.gate.admit_http(method, context.authority, context.surface)
        except RpcError as exc:
            raise self.errors.answer(exc, context.peer.label, context.authority.principal_id, method) from None

    async def call(self, method: str, params: object, context: CallContext, *, query: bool = False) -> Any:
        """Run `method` for an HTTP route, raising the `RpcError` a JSON-RPC request would have been answered with.
        `query`: the params are a query string's, so strings become the numbers and booleans the model takes."""
        spec = self.admit(method, context)
        try:
            result = spec.handler(context, spec.params_from(params, strict=not query))
            if inspect.isawaitable(result):
                self.state.http_inflight += 1  # only a call that suspends can be seen running
                try:
                    result = await result
                finally:
                    self.state.http_inflight -= 1
        except Exception as exc:
            raise self.errors.answer(exc, context.peer.label, context.authority.principal_id, method) from None
        spec.answered[0] += 1
        # `AfterReply.then` subscribes a connection: an HTTP caller has none.
        return result.result if isinstance(result, AfterReply) else result


class DaemonState:
    """What the daemon's connections share and a handler may read (`rpc.core.context.DaemonView`): the open
    connections, the methods served, the terminals' environments, the traffic counters."""

    __slots__ = (
        "__weakref__",
        "_contract",
        "_dialects",
        "_errors",
        "_registry",
        "close_listeners",
        "connections",
        "http_inflight",
        "stalls",
    )

    def __init__(
        self,
        registry: Registry,
        errors: ErrorBoundary,
        dialects: tuple[Dialect, ...] = (),
        contract: Callable[[], bytes] | None = None,
    ) -> None:
        self._registry = registry
        self._errors = errors
        self._dialects = dialects
        self._contract = contract
        self.connections: set[Connection] = set()
        self.close_listeners: list[Callable[[Connection], None]] = []
        self.stalls = 0  # closed peers that were cut off for not reading, since start
        self.http_inflight = 0

    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def method_names(self) -> list[str]:
        return self._registry.names()

    def add_close_listener(self, listener: Callable[[Connection], None]) -> None:
        """Run `listener(connection)` when a connection ends (e.g. to discard what it staged)."""
        self.close_listeners.append(listener)

    def dialect_for(self, peer: Peer, params: Mapping[str, Any]) -> Dialect:
        """The listener's dialect, else the first that claims the `initialize` params, else the standard one."""
        if isinstance(peer.dialect, Dialect):
            return peer.dialect
        for dialect in self._dialects:
            if dialect.claims(params):
                return dialect
        return STANDARD

    def contract(self) -> bytes:
        if self._contract is None:
            raise MethodNotFound("This daemon serves no contract document")
        return self._contract()

    def tui_env(self, tui_id: str, principal_id: str) -> Mapping[str, str] | None:
        """The environment the open terminal `tui_id` of `principal_id` handed over at `initialize` (R-ZC-6).
        Another principal's terminal is never found: its environment is its own."""
        for connection in self.connections:
            terminal = connection.terminal
            if terminal is not None and terminal.tui_id == tui_id and connection.principal_id == principal_id:
                return terminal.env
        return None

    def traffic(self) -> Traffic:
        """The counters and gauges of `GET /metrics`, summed now (O(connections))."""
        connections: Counter[str] = Counter()
        inflight = self.http_inflight
        queued = 0
        for connection in self.connections:
            connections[connection.surface.value] += 1
            inflight += len(connection.inflight)
            queued += connection.transport.queued_bytes()
        stalls = self.stalls + sum(connection.cut_off for connection in self.connections)
        answers = {(method, "ok"): count for method, count in self._registry.answered().items()}
        answers.update(self._errors.answered)
        return Traffic(dict(connections), answers, inflight, queued, stalls)


def _sign_in(
    gate: Gate,
    connection: Connection,
    credential: object,
    principal: Principal,
    capabilities: Mapping[str, Any],
    dialect: Dialect,
    terminal: Terminal | None,
) -> None:
    """`initialize` authenticated the peer as `principal`, under the policy in force now, speaking `dialect`."""
    gate.sign_in(connection.authority, connection.surface, credential, principal, dialect)
    connection.capabilities = capabilities
    connection.terminal = terminal


def _signed(
    credential: object, principal: Principal, capabilities: Mapping[str, Any], dialect: Dialect, terminal: object
) -> None:
    raise RuntimeError("an HTTP caller is signed in by its bearer token, not by `initialize`")
