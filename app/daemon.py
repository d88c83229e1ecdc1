"""`zeroclaw daemon`: the composition root that wires paths, config, auth and the transports together.

Start-up order matters: directories (0700) → endpoint lock → config → listener (0600 socket) → readiness
line. Shutdown undoes it: stop accepting → close connections → remove our own socket → release the lock.

Under a service manager (R-SVC): sockets it passed (`LISTEN_FDS`) are served instead of binding our own, and
are left in place at exit; `NOTIFY_SOCKET` hears READY/RELOADING/STOPPING/WATCHDOG. Both modules
(`app.service.activation`, `app.service.notify`) are imported only when their variable is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import gc
import importlib
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.agents.sandbox import SandboxHost
from app.audit import AuditLog
from app.auth.authenticator import Authenticator
from app.auth.tokens import PairedTokens
from app.config.errors import ConfigError
from app.config.reload import ConfigWatcher
from app.config.store import ConfigStore
from app.endpoint_lock import AlreadyRunning, EndpointLock
from app.ephemeral import EphemeralWatch
from app.exception_chain import causes
from app.gc_freeze import keep_what_lives_now
from app.paths import InsecureDirectory, Paths, ensure_endpoint_dir, ensure_private_dir, process_uid, resolve
from app.self_metrics import Observations
from app.services import Services
from app.sessions.registry import SessionRegistry
from app.signals import install_signal_handlers
from app.storage.db_lock import DatabaseInUse, DatabaseLock, acquire_sqlite_file
from app.storage.db_lock import acquire as acquire_database_lock
from app.storage.deferred import DeferredStorage
from app.storage.errors import masked_url, open_failure
from app.storage.migrate import create_new_sqlite, is_current_sqlite_file
from app.telemetry import start_tracing
from rpc.contract.discover import encoded_document
from rpc.core.dialect import STANDARD
from rpc.core.dispatcher import Dispatcher
from rpc.core.log_stream import install as install_log_stream
from rpc.dialects import DIALECTS
from rpc.methods import ERROR_MAPPERS, build_registry
from rpc.methods.files import connection_closed as files_connection_closed
from rpc.transports.stream import NdjsonProtocol
from rpc.transports.unix import EndpointError, UnixListener, peer_of, serve_inherited, serve_unix

if TYPE_CHECKING:
    import socket

    from starlette.applications import Starlette

    from app.agents.permissions import RuleBook
    from app.auth.pairing import PairingStore
    from app.files.service import FileService
    from app.service.activation import Inherited
    from app.service.notify import Notifier
    from app.sessions.store.session_store import SessionStore
    from app.storage.database import Database
    from gateway.server import GatewayHandle
    from rpc.transports.pipe import PipeServer

__all__ = ["SESSION_STORE_PARTS", "DaemonOptions", "run"]

log = logging.getLogger("zeroclaw.daemon")


@dataclass(frozen=True, slots=True)
class DaemonOptions:
    config_dir: str | None = None
    ephemeral: bool = False
    gateway: bool = True
    gateway_port: int | None = None


class StartupError(Exception):
    """A one-line reason the daemon cannot start; printed as is, exit status 1."""


def run(options: DaemonOptions) -> int:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_main(options))
    return int(uvloop.run(_main(options)))


async def _main(options: DaemonOptions) -> int:
    paths = resolve(options.config_dir)
    notifier = _notifier()
    try:
        inherited = _inherited()
        if inherited is not None and inherited.rpc_path is not None:
            paths = dataclasses.replace(paths, endpoint=inherited.rpc_path)  # where clients reached us
        lock = _prepare(paths)
    except StartupError as exc:
        print(f"zeroclaw daemon: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        return await _serve(paths, lock, options, inherited, notifier)
    except StartupError as exc:
        print(f"zeroclaw daemon: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        lock.release()
        if notifier is not None:
            notifier.close()


def _inherited() -> Inherited | None:
    """The sockets a service manager passed (R-SVC-1), or None when it passed none (a start by hand)."""
    if sys.platform == "win32" or "LISTEN_FDS" not in os.environ:
        return None
    from app.service.activation import ActivationError, take

    try:
        inherited = take()
    except ActivationError as exc:
        raise StartupError(f"socket activation: {exc}") from None
    return inherited if inherited.rpc is not None or inherited.gateway is not None else None


def _notifier() -> Notifier | None:
    """The service manager's readiness channel (R-SVC-2), when `NOTIFY_SOCKET` names one."""
    if sys.platform == "win32" or "NOTIFY_SOCKET" not in os.environ:
        return None
    from app.service.notify import from_env

    return from_env()


def _prepare(paths: Paths) -> EndpointLock:
    try:
        ensure_private_dir(paths.config_dir)
        ensure_private_dir(paths.data_dir, tighten=True)
        if sys.platform != "win32":
            ensure_endpoint_dir(Path(paths.endpoint), created_by_us=set())
    except InsecureDirectory as exc:
        raise StartupError(str(exc)) from None
    lock = EndpointLock(paths.lock_file)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        pid = exc.pid if exc.pid is not None else "unknown"
        raise StartupError(f"another daemon (pid {pid}) already serves {paths.endpoint}") from None
    except OSError as exc:
        raise StartupError(f"cannot lock {paths.lock_file}: {exc.strerror}") from None
    return lock


async def _serve(
    paths: Paths, lock: EndpointLock, options: DaemonOptions, inherited: Inherited | None, notifier: Notifier | None
) -> int:
    try:
        config_store = ConfigStore(paths.config_dir)
    except ConfigError as exc:
        raise StartupError(f"{paths.config_file}: {exc.message}") from None
    if (problem := config_store.current.wss.start_problem()) is not None:
        raise StartupError(problem)  # before anything listens
    stop = asyncio.Event()
    watcher = ConfigWatcher(config_store, hooks=notifier)
    # Each resource registers its cleanup when acquired; they run in reverse on any exit (a failed start
    # too): gateway, listener, files, sessions, audit log, database, signal handlers.
    async with contextlib.AsyncExitStack() as cleanup:
        # SIGHUP reloads config.toml (R-CFG-6); Windows has none: the stat poll alone sees edits there.
        cleanup.callback(install_signal_handlers(asyncio.get_running_loop(), stop.set, reload=watcher.request))
        services = await _storage_and_services(paths, config_store, cleanup)
        cleanup.callback(services.audit.close)
        await cleanup.enter_async_context(watcher.running())  # after the commit listeners are registered
        # R-MODEL-6: OpenTelemetry only when an OTLP endpoint is set (nothing imported otherwise); its last export
        # runs after the sessions' shutdown ended their turns.
        services.sessions.turns.tracer = tracer = start_tracing(config_store.current.telemetry)
        cleanup.push_async_callback(tracer.shutdown)
        cleanup.push_async_callback(services.sessions.shutdown)
        cleanup.callback(_close_files, services)
        grace = config_store.current.daemon.ephemeral_grace_secs
        watch = EphemeralWatch(grace, lambda: _idle_exit(grace, stop)) if options.ephemeral else None
        dispatcher = Dispatcher(
            build_registry(),
            services,
            services.audit,
            limits=lambda: config_store.current.limits,
            on_count_change=watch.connections_changed if watch else lambda _n: None,
            dialects=tuple(DIALECTS.values()),
            contract=encoded_document,
        )
        for mapper in ERROR_MAPPERS:
            dispatcher.errors.add_mapper(mapper)
        dispatcher.state.add_close_listener(files_connection_closed)
        # `logs/subscribe` (R-ZC-4): log records to the connections that ask, detached at shutdown.
        cleanup.callback(install_log_stream(dispatcher.state).close)
        rpc_sock, gateway_sock = (inherited.rpc, inherited.gateway) if inherited is not None else (None, None)
        await _listen(paths.endpoint, dispatcher, cleanup, inherited=rpc_sock)
        gateway = await _start_gateway(options, services, dispatcher, gateway_sock) if options.gateway else None
        if gateway is not None:
            cleanup.push_async_callback(gateway.close)  # first out: WebSocket peers get close 1012
        elif gateway_sock is not None:
            log.warning("a gateway socket was passed, but the gateway is off (--no-gateway): not served")
            gateway_sock.close()
        if services.config.wss.enabled:  # zerocode's remote mode (R-SVC-4), independent of the gateway
            cleanup.push_async_callback((await _start_wss(services, dispatcher)).close)
        gateway_label = gateway.url if gateway is not None else "off"
        print(f"zeroclaw daemon ready: socket={paths.endpoint} gateway={gateway_label}", file=sys.stderr, flush=True)
        if notifier is not None:
            notifier.status = lambda: f"serving socket={paths.endpoint} gateway={gateway_label}"
            notifier.ready()
            notifier.start_watchdog()
        if watch is not None and inherited is not None:
            watch.arm()  # on demand (R-SVC-1): a start whose client went away still ends
        _after_ready()
        cleanup.callback(services.observations.watch_gc())  # zeroclaw_gc_pause_seconds (GET /metrics)
        if notifier is not None:
            cleanup.callback(notifier.stopping)  # first of the cleanups: the manager knows before we go
        await stop.wait()
    return 0


async def _storage_and_services(
    paths: Paths, config_store: ConfigStore, cleanup: contextlib.AsyncExitStack
) -> Services:
    """Lock and open the database, then build the services on it; its cleanups join `cleanup`.

    Fast start: the default SQLite database, already at the newest revision (one stdlib query says so) or brand new
    (created at that revision from `app.storage.sqlite_schema`), is opened by the first call that needs it
    (`app.storage.deferred`), so start-up and an idle daemon never import SQLAlchemy or Alembic. Any other case (a
    configured URL, an older file, one that cannot be read) migrates and opens it here, and a failure is the one
    start-up line of R-STORE-3.
    """
    configured = config_store.current.storage.url
    observations = Observations()
    if configured is None:
        database = paths.database
        try:  # one daemon per database, before anything reads it
            lock = acquire_sqlite_file(database, lambda: _default_url(paths.data_dir))
        except DatabaseInUse as exc:
            raise StartupError(str(exc)) from None
        cleanup.push_async_callback(lock.release)
        # A brand-new database gets the newest schema in one transaction (no Alembic): it starts fast too.
        if is_current_sqlite_file(database) or (create_new_sqlite(database) and is_current_sqlite_file(database)):
            storage = DeferredStorage(lambda: _open_deferred(paths.data_dir, observations))
            cleanup.push_async_callback(storage.close)
            pairing = storage.stand_in(_pairing_store)
            store = storage.stand_in(_session_store, kept=frozenset({"lists.kept_page"}), parts=SESSION_STORE_PARTS)
            rules = storage.stand_in(_permission_store)
            return _services(paths, config_store, None, pairing, store, observations, rules)
        url = _default_url(paths.data_dir)
    else:
        url = configured
        cleanup.push_async_callback((await _lock_database(url)).release)  # one daemon per database
    db = await _open_database(url, observations)
    cleanup.push_async_callback(db.close)
    stores = (_pairing_store(db), _session_store(db))
    return _services(paths, config_store, db, *stores, observations, _permission_store(db))


def _default_url(data_dir: Path) -> str:
    from app.storage.engine import default_url

    return default_url(data_dir)


async def _open_deferred(data_dir: Path, observations: Observations) -> Database:
    """The fast start's opener, run by the first call that needs storage: SQLAlchemy, the models and the stores are
    imported in a worker thread (the loop keeps answering meanwhile), then the database opens as it would at start."""
    url = await asyncio.to_thread(_load_storage, data_dir)
    from app.storage.database import Database
    from app.storage.driver_faults import install_from_env as install_fault_file

    install_fault_file()
    database = await Database.open(url, timings=observations.storage)
    keep_what_lives_now()
    return database


# What the first storage call needs, imported by `_load_storage` in a worker thread, off the loop.
# `SessionStore`'s parts (`store.transcript`, …): before the deferred open they stand in too (app/storage/deferred.py);
# a part left out here broke the first call that reached it after a restart (tests/unit/test_daemon_store_parts.py).
SESSION_STORE_PARTS = frozenset({"transcript", "lists", "usage", "forks", "rollbacks"})

_STORAGE_MODULES = (
    "app.storage.database",
    "app.storage.driver_faults",
    "app.storage.faults",
    "app.auth.pairing",
    "app.sessions.store.session_store",
)


def _load_storage(data_dir: Path) -> str:
    for name in _STORAGE_MODULES:
        importlib.import_module(name)
    return _default_url(data_dir)


def _pairing_store(db: Database) -> PairingStore:
    from app.auth.pairing import PairingStore

    return PairingStore(db)


def _permission_store(db: Database) -> RuleBook:
    from app.agents.permissions.store import PermissionStore

    return PermissionStore(db)


def _session_store(db: Database) -> SessionStore:
    from app.sessions.store.session_store import SessionStore
    from app.storage.faults import Faults

    return SessionStore(db, faults=Faults.from_env())


async def _lock_database(url: str) -> DatabaseLock:
    from app.storage.engine import driver_problem

    if (problem := driver_problem(url)) is not None:  # e.g. `postgresql://`, which means psycopg
        raise StartupError(f"cannot open the database {masked_url(url)}: {problem}")
    try:
        return await acquire_database_lock(url)
    except DatabaseInUse as exc:
        raise StartupError(str(exc)) from None
    except Exception as exc:  # unreachable, refused credentials: the same one line as _open_database gives
        raise StartupError(f"cannot open the database {masked_url(url)}: {open_failure(exc, url)}") from None


async def _open_database(url: str, observations: Observations) -> Database:
    from app.storage.database import Database
    from app.storage.driver_faults import install_from_env as install_fault_file
    from app.storage.migrate import upgrade_if_needed

    install_fault_file()  # tests only: ZEROCLAW_STORAGE_FAULT_FILE (docs/sessions-storage.md); a no-op when unset
    try:
        await asyncio.to_thread(upgrade_if_needed, url)
        return await Database.open(url, timings=observations.storage)
    except Exception as exc:  # any driver or migration failure: one line naming the URL (R-STORE-3), no traceback
        raise StartupError(f"cannot open the database {masked_url(url)}: {open_failure(exc, url)}") from None


def _services(
    paths: Paths,
    config_store: ConfigStore,
    db: Database | None,
    pairing_store: PairingStore,
    store: SessionStore,
    observations: Observations,
    rule_book: RuleBook,
) -> Services:
    """The domain services every surface shares, wired to each other."""
    pairing = PairedTokens(pairing_store)
    auth = Authenticator(lambda: config_store.current, lambda: config_store.policy_generation, process_uid())
    auth.tokens = pairing
    config_store.on_commit(lambda _old, _new: auth.policy_changed())
    sandbox = SandboxHost(_hidden_from_tools(paths))
    sandbox.check_soon(config_store.current.tools.bash.sandbox)  # R-GUARD-4: `auto` without bwrap says so once
    sessions = SessionRegistry(
        store,
        lambda: config_store.current,
        paths.data_dir,
        encode=STANDARD.encode_updates,
        rule_book=rule_book,
        sandbox=sandbox,
    )
    sessions.turns.observe_usage = observations.provider_used  # zeroclaw_provider_* (GET /metrics, R-MODEL-5)
    return Services(
        paths=paths,
        config_store=config_store,
        auth=auth,
        audit=AuditLog(paths.audit_log),
        db=db,
        pairing=pairing,
        sessions=sessions,
        permissions=rule_book,
        sandbox=sandbox,
        files_factory=lambda: _file_service(paths, config_store, sessions),
        observations=observations,
    )


def _hidden_from_tools(paths: Paths) -> list[Path]:
    """What a sandboxed command may not see: config (tokens, secrets), data (database, sockets) and the socket's
    directory when it lives elsewhere (not `/` or the home directory, which would hide too much)."""
    hidden = [paths.config_dir, paths.data_dir]
    if not sys.platform.startswith("win"):
        parent = Path(paths.endpoint).parent
        if parent != Path("/") and parent != Path.home():
            hidden.append(parent)
    return hidden


def _file_service(paths: Paths, config_store: ConfigStore, sessions: SessionRegistry) -> FileService:
    """Made by the first call that needs it (`Services.file_service`): nothing is staged before that."""
    from app.files.service import FileService, staging_dir_for

    return FileService(sessions, lambda: config_store.current.limits, staging_dir=staging_dir_for(paths.data_dir))


def _close_files(services: Services) -> None:
    if services.files is not None:  # only if a call made it
        services.files.close()


async def _start_gateway(
    options: DaemonOptions, services: Services, dispatcher: Dispatcher, sock: socket.socket | None = None
) -> GatewayHandle:
    # Here, so `--no-gateway` never loads uvicorn; Starlette and the routes come with the first request.
    from gateway.server import AppOnFirstRequest, GatewayStartError, start_gateway
    from rpc.transports.websocket import ws_max_size

    def build() -> Starlette:
        from gateway.app import create_app  # imported by now (`AppOnFirstRequest`, in a worker thread)

        return create_app(dispatcher, pairing_codes=services.pairing_codes)

    config = services.config
    app = AppOnFirstRequest("gateway.app", build)
    port = options.gateway_port if options.gateway_port is not None else config.gateway.port

    async def start(port: int) -> GatewayHandle:
        return await start_gateway(
            app,
            host=config.gateway.host,
            port=port,
            tls_cert=config.gateway.tls_cert,
            tls_key=config.gateway.tls_key,
            ws_max_size=ws_max_size(config.limits.max_frame_bytes),
            sock=sock,
        )

    try:
        try:
            handle = await start(port)
        except (GatewayStartError, OSError) as exc:
            # R-EPH-3: a daemon a client started for itself (`--ephemeral`, no port asked for) takes any free port
            # rather than fail because another daemon holds the configured one.
            if not (_address_in_use(exc) and options.ephemeral and options.gateway_port is None and sock is None):
                raise
            handle = await start(0)
            log.warning("the gateway port %d is in use; this ephemeral daemon's gateway is %s", port, handle.url)
    except (GatewayStartError, OSError) as exc:
        if _address_in_use(exc):
            raise StartupError(_port_in_use(config.gateway.host, port)) from None
        raise StartupError(str(exc) if isinstance(exc, GatewayStartError) else _gateway_failure(exc)) from None
    services.gateway_url = handle.url
    return handle


async def _start_wss(services: Services, dispatcher: Dispatcher) -> GatewayHandle:
    from gateway.remote import remote_url, start_remote_listener
    from gateway.server import GatewayStartError

    wss = services.config.wss
    try:
        handle = await start_remote_listener(dispatcher, wss)
    except (GatewayStartError, OSError) as exc:
        if _address_in_use(exc):
            raise StartupError(
                f"the [wss] listener cannot listen on {wss.host}:{wss.port}: the port is in use; set [wss] port"
            ) from None
        if isinstance(exc, GatewayStartError):
            raise StartupError(str(exc)) from None
        raise StartupError(f"the [wss] listener did not start: {exc.strerror or type(exc).__name__}") from None
    # Before the ready line, so whoever waits for that one can read this one too.
    print(f"zeroclaw daemon: zerocode remote mode on {remote_url(handle)}", file=sys.stderr, flush=True)
    return handle


def _idle_exit(grace: float, stop: asyncio.Event) -> None:
    log.info("stopping: no client for %g s (--ephemeral)", grace)
    stop.set()


def _address_in_use(exc: BaseException) -> bool:
    """The bind failed because the port is taken: `exc` or what it was raised from is EADDRINUSE."""
    return any(
        isinstance(seen, OSError) and (seen.errno == errno.EADDRINUSE or getattr(seen, "winerror", None) == 10048)
        for seen in causes(exc)
    )


def _port_in_use(host: str, port: int) -> str:
    return (
        f"the gateway cannot listen on {host}:{port}: the port is in use (another zeroclaw daemon?); "
        "start this one with `--gateway-port 0` (any free port) or `--no-gateway`, or set [gateway] port"
    )


def _gateway_failure(exc: OSError) -> str:
    return f"the gateway did not start: {exc.strerror or type(exc).__name__}"


def _after_ready() -> None:
    """Once ready: what start-up made lives as long as the process (`app.gc_freeze`); then collection goes on (the
    CLI turns it off for the start, app/cli/__init__.py)."""
    keep_what_lives_now()
    gc.enable()


async def _listen(
    endpoint: str,
    dispatcher: Dispatcher,
    cleanup: contextlib.AsyncExitStack,
    *,
    pipe: bool = sys.platform == "win32",
    inherited: socket.socket | None = None,
) -> None:
    """Serve the local endpoint: the named pipe on Windows, the Unix socket elsewhere (`inherited`: the one a
    service manager passed). Both serve the same `NdjsonProtocol`, so they share one read/write loop (R-ARCH-1);
    only accepting differs."""
    if pipe:
        from rpc.transports.pipe import PipeEndpointError, pipe_peer, serve_pipe  # never imported on Unix

        try:
            pipe_server = await serve_pipe(endpoint, lambda: NdjsonProtocol(dispatcher, pipe_peer))
        except PipeEndpointError as exc:
            raise StartupError(str(exc)) from None
        cleanup.push_async_callback(_shutdown_pipe, pipe_server, dispatcher)
        return
    factory = lambda: NdjsonProtocol(dispatcher, peer_of)  # noqa: E731
    try:
        if inherited is not None:
            listener = await serve_inherited(inherited, Path(endpoint), factory)
        else:
            listener = await serve_unix(Path(endpoint), factory)
    except EndpointError as exc:
        raise StartupError(str(exc)) from None
    cleanup.push_async_callback(_shutdown, listener, dispatcher)


async def _shutdown(listener: UnixListener, dispatcher: Dispatcher) -> None:
    listener.server.close()
    listener.remove_socket_file()
    dispatcher.close_all()
    try:
        await asyncio.wait_for(listener.server.wait_closed(), 2.0)
    except TimeoutError:
        log.warning("some connections did not close within 2 s")


async def _shutdown_pipe(pipe: PipeServer, dispatcher: Dispatcher) -> None:
    pipe.close()  # no new clients; the connected ones are closed next, as on the socket
    dispatcher.close_all()
    try:
        await asyncio.wait_for(pipe.wait_closed(), 2.0)
    except TimeoutError:
        log.warning("the named pipe's accept loop did not stop within 2 s")
