"""The daemon's log records as `logs/event` notifications to the connections that asked (`logs/subscribe`, R-ZC-4).

A `logging.Handler` on the `zeroclaw` logger (INFO and up) is attached while some connection subscribes. A record
may come from any thread: the handler only queues `(logger, level, time, message)` and wakes the loop
(`call_soon_threadsafe`, or `call_soon` on the loop's own thread); the loop turns each into a LogEvent (ZeroClaw 0.8.4's
`crates/zeroclaw-log/src/event.rs` shape, the same in every dialect) and writes it to every subscriber. Nothing
here ever waits or slows the daemon:

* a subscriber whose transport is paused (it does not read, R-LIM) misses the event, counted in its `dropped`;
* at most `MAX_QUEUED` records wait for the loop; more are dropped, counted in `LogStream.dropped`;
* a record logged while events are being written (a transport that logs) is dropped: no recursion.

What goes out is the formatted message only: never a traceback, never the record's args or extras. The daemon's log
lines name no secrets, tokens or frame contents (R-SEC-6, docs/security.md), so neither do the events.
A connection's subscription ends with it (`DaemonView.add_close_listener`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from rpc.core.connection import Connection
from rpc.core.context import DaemonView
from rpc.core.envelope import encode_notifications

__all__ = ["MAX_QUEUED", "LogStream", "install", "log_event", "stream_for"]

LOGGER: Final = "zeroclaw"
METHOD: Final = "logs/event"
MAX_QUEUED: Final = 1024
SCHEMA_VERSION: Final = 2

# (lowest level, OTel severity_number, severity_text), highest first.
_SEVERITIES: Final = (
    (logging.CRITICAL, 21, "CRITICAL"),
    (logging.ERROR, 17, "ERROR"),
    (logging.WARNING, 13, "WARN"),
    (logging.INFO, 9, "INFO"),
)

_Item = tuple[str, int, float, str]  # logger name, level, time.time() of the record, formatted message


def severity(level: int) -> tuple[int, str]:
    for lowest, number, text in _SEVERITIES:
        if level >= lowest:
            return number, text
    return 5, "DEBUG"  # below INFO: never attached at that level, here for completeness


def timestamp(created: float) -> str:
    """RFC 3339 UTC with milliseconds: `2026-01-31T12:00:00.123Z`."""
    seconds = int(created)
    millis = min(999, int((created - seconds) * 1000))
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{millis:03d}Z"


def log_event(logger: str, level: int, created: float, message: str) -> dict[str, Any]:
    """A record as ZeroClaw's LogEvent (schema 2), the fields a terminal client reads and the ones a record has."""
    number, text = severity(level)
    return {
        "id": str(uuid.uuid4()),
        "@timestamp": timestamp(created),
        "severity_number": number,
        "severity_text": text,
        "event": {"category": logger, "action": "log", "outcome": "unknown"},
        "service": "zeroclaw",
        "message": message,
        "schema_version": SCHEMA_VERSION,
    }


@dataclass(eq=False, slots=True)
class Subscriber:
    connection: Connection
    sent: int = 0
    dropped: int = 0  # events it missed while its transport was paused


class _Handler(logging.Handler):
    def __init__(self, stream: LogStream) -> None:
        super().__init__(logging.INFO)
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:  # runs under the handler's lock, on any thread
        self._stream._offer(record)

    def handleError(self, record: logging.LogRecord) -> None:
        pass  # a record that cannot be formatted is not streamed; it never disturbs the caller


class LogStream:
    """The subscribers of one dispatcher and the handler that feeds them."""

    def __init__(self, loop: asyncio.AbstractEventLoop, logger: str = LOGGER) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # made on the loop's thread (`install`)
        self._logger = logging.getLogger(logger)
        self._handler = _Handler(self)
        self._subscribers: dict[Connection, Subscriber] = {}
        self._queue: deque[_Item] = deque()
        self._scheduled = False  # a `_drain` is on the loop's ready queue
        self._delivering = False
        self._attached = False
        self.dropped = 0  # records never queued: queue full, or logged while events were being written

    @property
    def subscribers(self) -> list[Subscriber]:
        return list(self._subscribers.values())

    def subscribe(self, connection: Connection) -> None:
        """Stream to `connection` from now on until it ends (a second call changes nothing)."""
        if connection.closed or connection in self._subscribers:
            return
        self._subscribers[connection] = Subscriber(connection)
        if not self._attached:
            self._attached = True
            self._logger.addHandler(self._handler)

    def unsubscribe(self, connection: Connection) -> Subscriber | None:
        subscriber = self._subscribers.pop(connection, None)
        if not self._subscribers:
            self._detach()
        return subscriber

    def close(self) -> None:
        self._subscribers.clear()
        self._detach()

    def _detach(self) -> None:
        if self._attached:
            self._attached = False
            self._logger.removeHandler(self._handler)
        self._handler.acquire()
        try:
            self._queue.clear()
        finally:
            self._handler.release()

    # -- the handler's side (any thread, under the handler's lock)

    def _offer(self, record: logging.LogRecord) -> None:
        on_loop = threading.get_ident() == self._loop_thread
        if (self._delivering and on_loop) or len(self._queue) >= MAX_QUEUED:
            self.dropped += 1
            return
        try:
            message = record.getMessage()
        except Exception:
            return
        self._queue.append((record.name, record.levelno, record.created, message))
        if self._scheduled:
            return
        self._scheduled = True
        try:
            if on_loop:
                self._loop.call_soon(self._drain)
            else:
                self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: the daemon is gone
            self._scheduled = False
            self._queue.clear()

    # -- the loop's side

    def _drain(self) -> None:
        self._handler.acquire()
        try:
            items = list(self._queue)
            self._queue.clear()
            self._scheduled = False
        finally:
            self._handler.release()
        if not self._subscribers:
            return
        self._delivering = True
        try:
            for item in items:
                self._deliver(encode_notifications(METHOD, [log_event(*item)])[0])
        finally:
            self._delivering = False

    def _deliver(self, frame: bytes) -> None:
        for subscriber in list(self._subscribers.values()):
            connection = subscriber.connection
            if connection.closed:
                self.unsubscribe(connection)
                continue
            transport = connection.transport
            if transport.writing_paused:
                subscriber.dropped += 1
                continue
            transport.send(frame)
            subscriber.sent += 1


_STREAMS: weakref.WeakKeyDictionary[Any, LogStream] = weakref.WeakKeyDictionary()


def install(daemon: DaemonView) -> LogStream:
    """The daemon's stream, made on the first call (on the loop's thread): subscriptions end with their
    connection. `app.daemon` installs it on the dispatcher's `DaemonState` and closes it at shutdown."""
    stream = _STREAMS.get(daemon)
    if stream is None:
        stream = LogStream(asyncio.get_running_loop())

        def closed(connection: Connection) -> None:
            stream.unsubscribe(connection)

        daemon.add_close_listener(closed)
        _STREAMS[daemon] = stream
    return stream


def stream_for(daemon: object) -> LogStream | None:
    """The stream `logs/subscribe` adds a connection to (installed on first use), or None for a daemon view that
    has no connections to end (a test double)."""
    stream = _STREAMS.get(daemon)
    if stream is None and callable(getattr(daemon, "add_close_listener", None)):
        stream = install(daemon)  # type: ignore[arg-type]
    return stream
