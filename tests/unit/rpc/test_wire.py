"""R-ARCH-4: the domain returns typed values; `rpc.core.wire` alone makes their camelCase wire shape."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import orjson
import pytest

from app.services import DaemonStatus, GatewayInfo
from app.sessions.events import SessionEvent
from app.sessions.live.session import LiveSession
from app.sessions.registry import Opened
from app.sessions.views import SessionInfo, SessionSummary
from rpc.core.dialect import STANDARD
from rpc.core.session_bridge import ClientSink
from rpc.core.wire import camel, events_to_wire, to_wire

pytestmark = pytest.mark.req("R-ARCH-4")

ROOT = Path(__file__).resolve().parents[3]
CREATED = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
ACTIVE = datetime(2024, 5, 6, 8, 0, 0, tzinfo=UTC)


def test_session_info_wire_shape() -> None:
    live = LiveSession("s1", "alice", "default", "acp", Path("/work/space"), "rpc")
    info = Opened(live, resumed=True, message_count=4, model="m-1").describe()
    assert info == SessionInfo("s1", "default", "acp", 4, "/work/space", True, "m-1")
    wire = to_wire(info)
    assert wire == {
        "sessionId": "s1",
        "agentAlias": "default",
        "mode": "acp",
        "messageCount": 4,
        "workspaceDir": "/work/space",
        "resumed": True,
        "model": "m-1",
        "temperature": None,
    }
    assert list(wire) == [
        "sessionId", "agentAlias", "mode", "messageCount", "workspaceDir", "resumed", "model", "temperature"
    ]  # fmt: skip


def test_session_summary_wire_shape() -> None:
    summary = SessionSummary("s1", "default", "chat", True, False, CREATED, ACTIVE, 7, "Deploy it", "m-2", 0.5)
    wire = to_wire([summary])
    assert wire == [
        {
            "sessionId": "s1",
            "agentAlias": "default",
            "mode": "chat",
            "live": True,
            "killed": False,
            "createdAt": "2024-05-06T07:08:09.123Z",
            "lastActivity": "2024-05-06T08:00:00.000Z",
            "messageCount": 7,
            "title": "Deploy it",
            "model": "m-2",
            "temperature": 0.5,
            "parentId": None,
            "forkedAt": None,
        }
    ]
    assert list(wire[0]) == [
        "sessionId",
        "agentAlias",
        "mode",
        "live",
        "killed",
        "createdAt",
        "lastActivity",
        "messageCount",
        "title",
        "model",
        "temperature",
        "parentId",
        "forkedAt",
    ]


@pytest.mark.parametrize("gateway", [None, GatewayInfo("http://127.0.0.1:8080")])
def test_daemon_status_wire_shape(gateway: GatewayInfo | None) -> None:
    status = DaemonStatus(
        server_version="1.2.3",
        pid=42,
        endpoint="/run/zeroclaw.sock",
        gateway=gateway,
        data_dir="/data",
        config_file="/config.toml",
        uptime_secs=1.234,
        active_sessions=2,
        session_ids=["a", "b"],
        sandbox="bwrap",
    )
    wire = to_wire(status)
    assert wire == {
        "serverVersion": "1.2.3",
        "pid": 42,
        "endpoint": "/run/zeroclaw.sock",
        "gateway": None if gateway is None else {"url": "http://127.0.0.1:8080"},
        "dataDir": "/data",
        "configFile": "/config.toml",
        "uptimeSecs": 1.234,
        "activeSessions": 2,
        "sessionIds": ["a", "b"],
        "sandbox": "bwrap",  # R-GUARD-4
    }
    assert list(wire) == [
        "serverVersion",
        "pid",
        "endpoint",
        "gateway",
        "dataDir",
        "configFile",
        "uptimeSecs",
        "activeSessions",
        "sessionIds",
        "sandbox",
    ]


ARGS = {"command": "ls", "snake_case_key": 1, "nested": {"inner_key": [{"deep_key": True}]}}

# (domain event, today's wire params): every event type, written out literally.
EVENTS: list[tuple[SessionEvent, dict[str, Any]]] = [
    (
        {"session_id": "s1", "type": "agent_message_chunk", "text": "hi"},
        {"sessionId": "s1", "type": "agent_message_chunk", "text": "hi"},
    ),
    (
        {"session_id": "s1", "type": "agent_thought_chunk", "text": "hm"},
        {"sessionId": "s1", "type": "agent_thought_chunk", "text": "hm"},
    ),
    (
        {"session_id": "s1", "type": "tool_call", "tool_call_id": "c1", "name": "bash", "raw_input": ARGS},
        {"sessionId": "s1", "type": "tool_call", "toolCallId": "c1", "name": "bash", "rawInput": ARGS},
    ),
    (
        {"session_id": "s1", "type": "tool_result", "tool_call_id": "c1", "name": "bash", "raw_output": "ok"},
        {"sessionId": "s1", "type": "tool_result", "toolCallId": "c1", "name": "bash", "rawOutput": "ok"},
    ),
    (
        {
            "session_id": "s1",
            "type": "approval_request",
            "request_id": "r1",
            "tool_name": "bash",
            "arguments": ARGS,
            "timeout_secs": 120.0,
        },
        {
            "sessionId": "s1",
            "type": "approval_request",
            "requestId": "r1",
            "toolName": "bash",
            "arguments": ARGS,
            "timeoutSecs": 120.0,
        },
    ),
    (
        {"session_id": "s1", "type": "approval_resolved", "request_id": "r1", "decision": "reject"},
        {"sessionId": "s1", "type": "approval_resolved", "requestId": "r1", "decision": "reject"},
    ),
    (
        {
            "session_id": "s1",
            "type": "turn_complete",
            "stop_reason": "end_turn",
            "content": "done",
            "usage": {
                "input_tokens": 9,
                "output_tokens": 1,
                "cache_read_tokens": 0,
                "cache_write_tokens": 0,
                "cost_usd": None,
            },
        },
        {
            "sessionId": "s1",
            "type": "turn_complete",
            "stopReason": "end_turn",
            "content": "done",
            "usage": {
                "inputTokens": 9,
                "outputTokens": 1,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "costUsd": None,
            },
        },
    ),
    (
        {
            "session_id": "s1",
            "type": "usage",
            "input_tokens": 7,
            "output_tokens": 3,
            "cache_read_tokens": 2,
            "cache_write_tokens": 1,
            "cost_usd": 0.25,
            "context_tokens": 13,
            "session_cost_usd": 1.5,
        },
        {
            "sessionId": "s1",
            "type": "usage",
            "inputTokens": 7,
            "outputTokens": 3,
            "cacheReadTokens": 2,
            "cacheWriteTokens": 1,
            "costUsd": 0.25,
        },
    ),
    (
        {
            "session_id": "s1",
            "type": "history_trimmed",
            "dropped_messages": 4,
            "kept_messages": 2,
            "checkpoint": 5,
            "kept_turns": 1,
            "reason": "history message limit exceeded",
        },
        {"sessionId": "s1", "type": "history_trimmed", "droppedMessages": 4, "keptMessages": 2, "checkpoint": 5},
    ),
    (
        {"session_id": "s1", "type": "config_changed", "agent_alias": "a", "model": "m", "temperature": None},
        {"sessionId": "s1", "type": "config_changed", "agentAlias": "a", "model": "m", "temperature": None},
    ),
    (
        {"session_id": "s1", "type": "tool_progress", "tool_call_id": "t", "progress": 1, "total": 2, "message": "m"},
        {"sessionId": "s1", "type": "tool_progress", "toolCallId": "t", "progress": 1, "total": 2, "message": "m"},
    ),
    (
        {"session_id": "s1", "type": "rolled_back", "turns": 2, "from_index": 4},
        {"sessionId": "s1", "type": "rolled_back", "turns": 2, "fromIndex": 4},
    ),
    (
        {"session_id": "s1", "type": "user_message", "text": "also this", "index": 3},
        {"sessionId": "s1", "type": "user_message", "text": "also this", "index": 3},
    ),
]


def test_every_event_type_is_pinned() -> None:
    declared = {event.__annotations__["type"] for event in get_args(SessionEvent)}
    assert len(declared) == len(EVENTS) == len({e["type"] for e, _ in EVENTS})


@pytest.mark.parametrize(("event", "expected"), EVENTS, ids=[e["type"] for e, _ in EVENTS])
def test_event_wire_shape(event: SessionEvent, expected: dict[str, Any]) -> None:
    (wire,) = events_to_wire([event])
    assert wire == expected
    assert list(wire) == list(expected)  # same key order as before: session id, type, then the fields


def test_a_batch_is_its_events_one_by_one() -> None:
    assert events_to_wire([event for event, _ in EVENTS]) == [wire for _, wire in EVENTS]


def test_nested_user_data_keeps_its_keys() -> None:
    event: SessionEvent = {"session_id": "s1", "type": "tool_call", "tool_call_id": "c", "name": "n", "raw_input": ARGS}
    (wire,) = events_to_wire([event])
    assert wire["rawInput"] is ARGS  # passed through untouched, not copied or renamed
    assert ARGS == {"command": "ls", "snake_case_key": 1, "nested": {"inner_key": [{"deep_key": True}]}}


@pytest.mark.req("R-MODEL-5")
def test_turn_complete_usage_is_renamed_as_the_event_is() -> None:
    usage = {"input_tokens": 4, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": None}
    event: SessionEvent = {
        "session_id": "s1", "type": "turn_complete", "stop_reason": "end_turn", "content": "ok", "usage": usage,  # type: ignore[typeddict-item]
    }  # fmt: skip
    (wire,) = events_to_wire([event])
    assert wire["usage"] == {
        "inputTokens": 4, "outputTokens": 2, "cacheReadTokens": 0, "cacheWriteTokens": 0, "costUsd": None
    }  # fmt: skip


def test_camel() -> None:
    assert [camel(n) for n in ("mode", "session_id", "dropped_messages", "tool_call_id")] == [
        "mode",
        "sessionId",
        "droppedMessages",
        "toolCallId",
    ]


class FakeClient:
    def __init__(self, answerable: bool, one_shot: bool = False) -> None:
        self.answerable = answerable
        self.one_shot = one_shot
        self.closed = False
        self.principal_id = "alice"
        self.dialect = STANDARD
        self.sent: list[tuple[str, list[Any]]] = []

    async def send_encoded(self, frames: list[bytes]) -> None:
        messages = [orjson.loads(frame) for frame in frames]
        assert {m["method"] for m in messages} == {"session/update"}
        self.sent.append(("session/update", [m["params"] for m in messages]))

    def when_gone(self, callback: Callable[[], None]) -> None:
        pass


class FakeSessions:
    def __init__(self) -> None:
        self.live = {"s1": SimpleNamespace(approvals={"r1": object()}, watchers=set())}
        self.approved: list[tuple[str, str, str]] = []
        self.turns = self  # the registry's `turns` answers approvals

    def approve(
        self, principal: Any, session_id: str, request_id: str, decision: str, replacement: str | None = None
    ) -> None:
        self.approved.append((session_id, request_id, decision))


async def test_client_sink_sends_the_wire_shape_and_reads_the_domain_keys() -> None:
    """`ClientSink` is the boundary: it sends camelCase params and reads the domain's snake_case keys."""
    client, sessions = FakeClient(answerable=False, one_shot=True), FakeSessions()
    sink = ClientSink(client, sessions, SimpleNamespace(principal=SimpleNamespace(id="alice")))  # type: ignore[arg-type]
    chunks = [EVENTS[0][0], EVENTS[0][0]]
    await sink.send_updates(chunks)  # type: ignore[arg-type]
    approval, wire = next((e, w) for e, w in EVENTS if e["type"] == "approval_request")
    await sink.send_updates([approval])  # type: ignore[list-item]
    assert client.sent == [("session/update", [EVENTS[0][1], EVENTS[0][1]]), ("session/update", [wire])]
    # a one-shot caller (HTTP) that can answer nothing: the approval request it was shown is rejected at once
    assert sessions.approved == [("s1", "r1", "reject")]


@pytest.mark.req("R-MULTI-3")
async def test_a_connection_that_went_away_leaves_its_approval_request_pending() -> None:
    """Regression of the rule before R-MULTI-3: a connection that can no longer answer (EOF) used to have the
    approval requests it was shown rejected at once; now another client may attach and answer them."""
    client, sessions = FakeClient(answerable=False, one_shot=False), FakeSessions()
    sink = ClientSink(client, sessions, SimpleNamespace(principal=SimpleNamespace(id="alice")))  # type: ignore[arg-type]
    approval = next(e for e, _ in EVENTS if e["type"] == "approval_request")
    await sink.send_updates([approval])  # type: ignore[list-item]
    assert sessions.approved == []


# JSON-schema keywords are camelCase by definition (a tool's parameters), not a wire shape of ours.
ALLOWED = {"minItems", "maxItems", "minLength", "maxLength", "additionalProperties"}
CAMEL_KEY = re.compile(r"""["']([a-z]+[A-Z]\w*)["']\s*:""")


def test_no_camel_case_keys_in_the_domain() -> None:
    """The rule cannot regress silently: no camelCase dict key in `app/` source (the CLI reads the wire)."""
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        if (ROOT / "app" / "cli") in path.parents:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [
                f"{path.relative_to(ROOT)}:{number}: {key}" for key in CAMEL_KEY.findall(line) if key not in ALLOWED
            ]
    assert found == []
