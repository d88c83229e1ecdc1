"""`logs/subscribe` and the `logs/event` stream (`rpc.core.log_stream`, R-ZC-4) over the in-memory transport."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from test_connection import FakePrincipal, initialized, make_server, req
from waiting import until

from rpc.core.log_stream import MAX_QUEUED, LogStream, log_event, stream_for
from rpc.transports.base import Peer
from rpc.transports.memory import MemoryTransport

pytestmark = pytest.mark.req("R-ZC-4")

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
log = logging.getLogger("zeroclaw.test")


@pytest.fixture(autouse=True)
def info_level() -> Iterator[None]:
    logger = logging.getLogger("zeroclaw")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_logs_event_params(p: Any) -> None:
    """zerocode's reading of `logs/event` params (apps/zerocode/src/logs.rs:90-123, as in the research's checker):
    `@timestamp` a string, `severity_number` a non-negative integer, an `event` key."""
    assert isinstance(p, dict)
    assert isinstance(p["@timestamp"], str)
    sev = p["severity_number"]
    assert isinstance(sev, int) and not isinstance(sev, bool) and sev >= 0
    assert "event" in p


def events(t: MemoryTransport) -> list[dict[str, Any]]:
    return [m["params"] for m in t.messages() if m.get("method") == "logs/event"]


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def subscribed() -> tuple[MemoryTransport, LogStream]:
    server, _ = make_server()
    t = await initialized(server)
    t.feed(req("logs/subscribe", {}, "sub"))
    assert await t.next_message() == {"jsonrpc": "2.0", "id": "sub", "result": {"subscribed": True}}
    stream = stream_for(server.state)
    assert stream is not None and len(stream.subscribers) == 1
    return t, stream


async def test_records_arrive_as_log_events() -> None:
    t, stream = await subscribed()
    log.info("hello %s", "world")
    log.debug("not at debug")
    logging.getLogger("elsewhere").warning("not a zeroclaw logger")
    try:
        raise ValueError("detail that must not leak")
    except ValueError:
        log.error("it failed", exc_info=True)
    log.warning("careful")
    log.critical("down")
    await settle()
    got = events(t)
    assert [e["message"] for e in got] == ["hello world", "it failed", "careful", "down"]
    for e in got:
        check_logs_event_params(e)
        assert TIMESTAMP.match(e["@timestamp"]) and UUID4.match(e["id"])
        assert e["event"] == {"category": "zeroclaw.test", "action": "log", "outcome": "unknown"}
        assert e["service"] == "zeroclaw" and e["schema_version"] == 2
        assert set(e) == {"id", "@timestamp", "severity_number", "severity_text", "event", "service", "message",
                          "schema_version"}  # fmt: skip
    assert [(e["severity_number"], e["severity_text"]) for e in got] == [
        (9, "INFO"),
        (17, "ERROR"),
        (13, "WARN"),
        (21, "CRITICAL"),
    ]
    assert b"must not leak" not in b"".join(t.sent) and b"Traceback" not in b"".join(t.sent)
    assert stream.subscribers[0].sent == 4


async def test_a_paused_subscriber_misses_events_and_they_are_counted() -> None:
    t, stream = await subscribed()
    t.set_writing_paused(True)
    log.info("while paused")
    await settle()
    assert events(t) == [] and stream.subscribers[0].dropped == 1
    t.set_writing_paused(False)
    log.info("after")
    await settle()
    assert [e["message"] for e in events(t)] == ["after"]


async def test_the_subscription_ends_with_the_connection() -> None:
    t, stream = await subscribed()
    handler_count = len(logging.getLogger("zeroclaw").handlers)
    t.close()
    assert stream.subscribers == []
    assert len(logging.getLogger("zeroclaw").handlers) == handler_count - 1  # detached: no cost without subscribers
    log.info("nobody listens")
    await settle()
    assert events(t) == []


async def test_records_from_worker_threads_reach_the_loop() -> None:
    t, _ = await subscribed()
    worker = threading.Thread(target=lambda: log.warning("from a thread"))
    worker.start()
    worker.join()
    await until(lambda: events(t), 1)
    assert [e["message"] for e in events(t)] == ["from a thread"]


class LoggingTransport(MemoryTransport):
    """A transport that logs whenever it sends: streaming must not feed on itself."""

    def send(self, frame: bytes) -> None:
        super().send(frame)
        if b"logs/event" in frame:
            log.info("sent an event")


async def test_sending_that_logs_does_not_recurse() -> None:
    server, _ = make_server()
    t = LoggingTransport(server)
    t.feed(req("initialize", {"protocolVersion": 1}, "init"))
    await t.next_message()
    t.feed(req("logs/subscribe", {}, "sub"))
    await t.next_message()
    stream = stream_for(server.state)
    assert stream is not None
    log.info("once")
    for _ in range(10):
        await asyncio.sleep(0)  # loop turns in which a send that logged would deliver its own record
    assert [e["message"] for e in events(t)] == ["once"]
    assert stream.dropped >= 1


async def test_a_flood_is_bounded() -> None:
    t, stream = await subscribed()
    for i in range(MAX_QUEUED + 10):
        log.info("flood %d", i)
    await settle()
    assert len(events(t)) == MAX_QUEUED and stream.dropped == 10


async def test_an_http_caller_is_not_subscribed() -> None:
    server, _ = make_server()
    principal: Any = FakePrincipal("owner", True)
    context = server.http_context(Peer("http:127.0.0.1:1", uid=None, remote=True), None, principal)
    assert await server.call("logs/subscribe", {}, context) == {"subscribed": False}


async def test_subscribing_twice_streams_once() -> None:
    t, stream = await subscribed()
    t.feed(req("logs/subscribe", None, "again"))
    assert (await t.next_message())["result"] == {"subscribed": True}
    log.info("one")
    await settle()
    assert len(events(t)) == 1 and len(stream.subscribers) == 1


def test_log_event_shape() -> None:
    event = log_event("zeroclaw.rpc", logging.WARNING, 1767225600.0125, "m")
    assert event["@timestamp"] == "2026-01-01T00:00:00.012Z"
    assert (event["severity_number"], event["severity_text"]) == (13, "WARN")
