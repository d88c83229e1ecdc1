"""What a handler sees of its call (R-ARCH-2): `CallContext`, never the connection.

A context names the daemon's typed `Services`, the caller (`Authority`: principal, credential, policy generation),
the `Surface` the call came in on and a `ClientChannel` for what the daemon asks or tells that caller. A socket,
pipe or WebSocket connection makes one context when it opens; an HTTP route makes one per request, with a
channel that can answer nothing (`NoClient`). The dispatcher (`rpc.core.dispatcher`) is what fills them in; what a
handler may read of the daemon is a `DaemonView`, never the dispatcher itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from rpc.core.dialect import STANDARD, Dialect
from rpc.core.errors import AuthRequired
from rpc.transports.base import ConnectionClosed

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from app.services import Services
    from rpc.transports.base import Peer

__all__ = ["Authority", "CallContext", "ClientChannel", "DaemonView", "NoClient", "Surface", "Terminal", "Traffic"]


class Surface(Enum):
    LOCAL = "local"  # the Unix socket or the Windows named pipe
    WEBSOCKET = "websocket"  # the gateway's /rpc
    HTTP = "http"  # the gateway's REST and webhook routes

    @property
    def remote(self) -> bool:
        """Local-only methods (`file/*`) are refused here (R-FILE-1, `-32012`)."""
        return self is not Surface.LOCAL


class Authority:
    """Who the caller is, and under which policy generation that was decided. A connection's changes with
    `initialize`; an HTTP call's is its bearer token's. `admitted` is the memo of the methods already admitted
    under that generation (`rpc.core.admission.Gate`): state, read and written there."""

    __slots__ = ("admitted", "credential", "dialect", "generation", "initialized", "principal")

    def __init__(self) -> None:
        self.credential: object = None
        self.principal: Principal | None = None
        self.generation = -1
        self.initialized = False
        self.dialect: Dialect = STANDARD  # how the caller speaks (`initialize` chooses, R-ZC-1)
        self.admitted: dict[str, Any] = {}  # method name → its `rpc.core.registry.MethodSpec`, as `dialect` runs it

    @property
    def principal_id(self) -> str | None:
        return self.principal.id if self.principal is not None else None

    def act_as(self, principal: Principal, generation: int, admitted: dict[str, Any]) -> None:
        self.principal, self.generation, self.admitted = principal, generation, admitted

    def sign_in(
        self,
        credential: object,
        principal: Principal,
        generation: int,
        admitted: dict[str, Any],
        dialect: Dialect = STANDARD,
    ) -> None:
        self.credential = credential
        self.dialect = dialect
        self.act_as(principal, generation, admitted)
        self.initialized = True

    def sign_out(self) -> None:
        self.admitted = {}  # never `.clear()`: the table may be shared between connections
        self.credential = None
        self.principal = None
        self.dialect = STANDARD
        self.initialized = False


class ClientChannel(Protocol):
    """The daemon→client direction of one caller (R-BIDI): requests it can answer, notifications it reads."""

    @property
    def closed(self) -> bool:
        """Disconnected: nothing more reaches it."""

    @property
    def answerable(self) -> bool:
        """It can still send (a `session/approve`, an answer to `elicitation/create`)."""

    @property
    def one_shot(self) -> bool:
        """A caller that never answers anything (an HTTP call), as opposed to a connection that may go away."""

    @property
    def capabilities(self) -> Mapping[str, Any]:
        """The `clientCapabilities` it declared in `initialize`."""

    @property
    def principal_id(self) -> str | None: ...

    @property
    def dialect(self) -> Dialect:
        """How this client's results and notifications are shaped (chosen by `initialize`)."""

    # `rpc.core.session_bridge.sink_for`'s sink for this client, kept here so it dies with it.
    sink: object

    async def request(self, method: str, params: Any, *, timeout: float, withdraw: str | None = None) -> Any:
        """Ask the client; raise `PeerError`, `TimeoutError`, `ConnectionClosed` or `PendingLimitReached`."""

    async def send_encoded(self, frames: list[bytes]) -> None:
        """Send encoded notification frames in order, waiting while the client is not reading (bounded outbound
        buffer)."""

    def when_gone(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the client can answer nothing more (at once if that is already so)."""

    def drop(self) -> None:
        """Close the connection: it missed updates that can no longer be sent to it (`app.sessions.live.follow`)."""


class NoClient:
    """The channel of an HTTP call: the answer is the HTTP response, and nobody can be asked anything (an
    elicitation is "unavailable", an approval request is rejected unless another client of the caller watches)."""

    __slots__ = ("principal_id", "sink")

    closed = False
    answerable = False
    one_shot = True
    capabilities: Mapping[str, Any] = {}
    dialect = STANDARD

    def __init__(self, principal_id: str | None) -> None:
        self.principal_id = principal_id
        self.sink: object = None

    async def request(self, method: str, params: Any, *, timeout: float, withdraw: str | None = None) -> Any:
        raise ConnectionClosed

    async def send_encoded(self, frames: list[bytes]) -> None:
        return None

    def when_gone(self, callback: Callable[[], None]) -> None:
        callback()

    def drop(self) -> None:
        return None


class Traffic(NamedTuple):
    """The dispatcher's counters at one moment (`GET /metrics`, rpc/methods/metrics.py)."""

    connections: dict[str, int]  # open connections by surface value (local, websocket)
    answers: dict[tuple[str, str], int]  # requests answered by (method, "ok" or the error kind), since start
    inflight: int  # requests running now (socket, pipe and WebSocket in-flight tables, and HTTP calls)
    queued_bytes: int  # output queued towards peers and not yet written, summed over connections
    stalls: int  # peers cut off for not reading (`outbound_stall_secs`), since start


class DaemonView(Protocol):
    """What a handler may know of the daemon's connections: the methods they may call, how many there are, the
    environment a terminal of the caller's handed over (R-ZC-6), the traffic counters, and when one closes; the
    dialect an `initialize` chooses, and the contract it serves (`rpc.discover`)."""

    @property
    def connection_count(self) -> int: ...

    def traffic(self) -> Traffic: ...

    def method_names(self) -> list[str]: ...

    def tui_env(self, tui_id: str, principal_id: str) -> Mapping[str, str] | None: ...

    def add_close_listener(self, listener: Callable[[Any], None]) -> None:
        """Call `listener(connection)` when a connection ends (e.g. to end its log subscription)."""

    def dialect_for(self, peer: Peer, params: Mapping[str, Any]) -> Dialect:
        """The dialect of a peer whose `initialize` sent `params`: its listener's, else the one these params ask
        for, else the standard one."""

    def contract(self) -> bytes:
        """The daemon's OpenRPC document, encoded (R-DISC-1)."""


SignIn = Callable[[object, "Principal", Mapping[str, Any], Dialect, "Terminal | None"], None]


class Terminal(NamedTuple):
    """A terminal client's identity and the environment it handed over at `initialize` (R-ZC-6)."""

    tui_id: str
    env: Mapping[str, str]


class CallContext:
    __slots__ = ("_recheck", "_sign_in", "authority", "client", "daemon_view", "peer", "services", "surface")

    def __init__(
        self,
        services: Services,
        daemon_view: DaemonView,
        surface: Surface,
        peer: Peer,
        authority: Authority,
        client: ClientChannel,
        recheck: Callable[[str], Principal],
        sign_in: SignIn,
    ) -> None:
        self.services = services
        self.daemon_view = daemon_view
        self.surface = surface
        self.peer = peer
        self.authority = authority
        self.client = client
        self._recheck = recheck
        self._sign_in = sign_in

    @property
    def principal(self) -> Principal:
        """The caller, as of the admission of this call."""
        principal = self.authority.principal
        if principal is None:  # only `initialize` runs unauthenticated, and it does not ask
            raise AuthRequired
        return principal

    def wire(self, value: Any) -> Any:
        """A typed result (dataclasses, lists of them) in the caller's dialect (`rpc.core.dialect`)."""
        return self.client.dialect.wire(value)

    def recheck(self, grant: str) -> Principal:
        """The caller under the policy in force now, holding `grant`; raises `AuthRequired` (a revoked credential)
        or `Forbidden`. For checks that must see a revocation that landed while the call waited (R-CFG-3)."""
        return self._recheck(grant)

    def sign_in(
        self,
        credential: object,
        principal: Principal,
        capabilities: Mapping[str, Any],
        *,
        dialect: Dialect = STANDARD,
        terminal: Terminal | None = None,
    ) -> None:
        """`initialize` authenticated the caller: from now on its calls run as `principal`, in `dialect`."""
        self._sign_in(credential, principal, capabilities, dialect, terminal)

    def sign_out(self) -> None:
        """`initialize` failed: the caller is no longer authenticated (a failed re-initialize keeps nothing)."""
        self.authority.sign_out()
