"""The ACP wire shapes (R-EDIT-2, R-EDIT-3, R-EDIT-5): events as updates, prompt content, permission answers, the
bridge's marker. End to end: tests/e2e/test_e2e_acp.py."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.cli.acp_command import _outgoing
from rpc.core.errors import InvalidParams
from rpc.dialects.acp.content import prompt_text
from rpc.dialects.acp.dialect import ACP
from rpc.dialects.acp.peer import _decision
from rpc.dialects.acp.updates import HISTORY_TRIMMED, MARKER, acp_update, encode, speaks_acp

SID = "s_1"


@pytest.mark.req("R-EDIT-5")
def test_events_become_acp_updates_and_unknown_keys_and_events_are_ignored() -> None:
    chunk = {"session_id": SID, "type": "agent_message_chunk", "text": "hi", "seq": 7}
    assert acp_update(chunk) == (
        "session/update",
        {
            "sessionId": SID,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
        },
    )
    call = {
        "session_id": SID,
        "type": "tool_call",
        "tool_call_id": "tc_1",
        "name": "bash",
        "raw_input": {"command": "ls"},
    }
    update = acp_update(call)
    assert update is not None and update[1]["update"] == {
        "sessionUpdate": "tool_call",
        "toolCallId": "tc_1",
        "title": "ls",
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": "ls"},
    }
    rejected = {"session_id": SID, "type": "tool_result", "tool_call_id": "tc_1", "name": "bash",
                "raw_output": "The user rejected this bash call; it was not run."}  # fmt: skip
    result = acp_update(rejected)
    assert result is not None and result[1]["update"]["status"] == "failed"
    trimmed = {"session_id": SID, "type": "history_trimmed", "dropped_messages": 2, "kept_messages": 3,
               "checkpoint": 1, "kept_turns": 1, "reason": "r"}  # fmt: skip
    assert acp_update(trimmed) == (
        HISTORY_TRIMMED,
        {"sessionId": SID, "droppedMessages": 2, "keptMessages": 3, "keptTurns": 1, "reason": "r"},
    )
    resolved = {"session_id": SID, "type": "approval_resolved", "request_id": "ap_1", "decision": "reject", "seq": 3}
    assert acp_update(resolved) is None
    assert acp_update({"session_id": SID, "type": "turn_complete", "stop_reason": "end_turn", "content": ""}) is None
    assert acp_update({"session_id": SID, "type": "something_new"}) is None


@pytest.mark.req("R-BRANCH-3")
def test_a_steer_becomes_acps_user_message_chunk() -> None:
    steered = {"session_id": SID, "type": "user_message", "text": "also this", "index": 3, "seq": 9}
    assert acp_update(steered) == (
        "session/update",
        {
            "sessionId": SID,
            "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "also this"}},
        },
    )


@pytest.mark.req("R-MODEL-5")
def test_usage_becomes_acps_usage_update_that_the_sdk_parses() -> None:
    from acp.schema import SessionNotification, UsageUpdate

    usage: Any = {
        "session_id": SID, "type": "usage", "input_tokens": 10, "output_tokens": 4, "cache_read_tokens": 6,
        "cache_write_tokens": 0, "cost_usd": 0.5, "context_tokens": 20, "session_cost_usd": 2.5,
    }  # fmt: skip
    method, params = acp_update(usage) or ("", {})
    assert method == "session/update"
    parsed = SessionNotification.model_validate(params).update
    assert isinstance(parsed, UsageUpdate) and (parsed.used, parsed.size) == (20, 0)
    assert parsed.cost is not None and (parsed.cost.amount, parsed.cost.currency) == (2.5, "USD")
    unpriced = acp_update({**usage, "cost_usd": None, "session_cost_usd": None}) or ("", {})
    assert "cost" not in unpriced[1]["update"]  # unpriced: no cost, rather than a made-up 0


@pytest.mark.req("R-EDIT-5")
@pytest.mark.parametrize("text", ["plain", 'quote " and \\ and \n', "\u00e9\U0001f600"])
def test_chunk_template_equals_the_general_path(text: str) -> None:
    events: list[Any] = [{"session_id": SID, "type": "agent_message_chunk", "text": text, "seq": 1}] * 2
    templated = ACP.encode_updates(events)
    assert [orjson.loads(f) for f in templated] == [orjson.loads(f) for f in encode(events)]


@pytest.mark.req("R-EDIT-3")
def test_prompt_content_blocks() -> None:
    text = prompt_text(
        [
            {"type": "text", "text": "look"},
            {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
            {"type": "resource", "resource": {"uri": "file:///b.py", "text": "x = 1"}},
        ]
    )
    assert text == 'look\n[a.py](file:///a.py)\n<context uri="file:///b.py">\nx = 1\n</context>'
    for bad in (
        [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
        [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}],
        [{"type": "resource", "resource": {"uri": "file:///c", "blob": "AAAA"}}],
        [],
    ):
        with pytest.raises(InvalidParams):
            prompt_text(bad)


@pytest.mark.req("R-EDIT-5")
def test_permission_answers_unknown_option_is_reject() -> None:
    def selected(option: str) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": option}}

    assert _decision(selected("allow_once")) == "allow_once"
    assert _decision(selected("allow_always")) == "allow_always"
    assert _decision(selected("reject_once")) == "reject"
    assert _decision(selected("reject_always")) == "reject_always"  # R-GUARD-3: for the session
    assert _decision(selected("no_such_option")) == "reject"
    assert _decision({"outcome": {"outcome": "cancelled"}}) == "reject"
    assert _decision(TimeoutError()) == "reject"


@pytest.mark.req("R-EDIT-1")
def test_bridge_marks_initialize_and_remembers_request_ids() -> None:
    pending: dict[bytes, Any] = {}
    line = _outgoing(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}', pending, "x")
    frame = orjson.loads(line)
    assert frame["params"]["_meta"] == {MARKER: {"agent": "x"}} and line.endswith(b"\n")
    assert speaks_acp(frame["params"]) == {"agent": "x"}
    assert speaks_acp({"protocolVersion": 1}) is None
    assert pending == {b"1": 1}
    assert _outgoing(b"not json", pending, None) == b"not json\n"
    _outgoing(b'{"jsonrpc":"2.0","method":"session/cancel","params":{}}\n', pending, None)
    assert pending == {b"1": 1}  # a notification is never answered
