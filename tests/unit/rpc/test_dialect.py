"""Dialects (R-ZC-1, R-ZC-2, R-ZC-5): the chosen one shapes events, results and questions; the standard one leaves
today's wire as it is. The e2e proof against a daemon, speaking as zerocode does, is tests/e2e/test_e2e_zerocode.py.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from test_wire import EVENTS

from app.sessions.errors import ApprovalNotFound
from rpc.core.dialect import STANDARD
from rpc.core.envelope import encode_notifications
from rpc.core.registry import AfterReply, validate
from rpc.dialects.zerocode.dialect import ZEROCODE, speaks_zerocode
from rpc.dialects.zerocode.methods import ZeroCodeApproveParams
from rpc.methods import build_registry
from rpc.methods.session import NewParams

SID = "s_1"


def chunk(text: str) -> Any:
    return {"session_id": SID, "type": "agent_message_chunk", "text": text}


@pytest.mark.req("R-ZC-2")
@pytest.mark.parametrize("dialect", [STANDARD, ZEROCODE], ids=["standard", "zerocode"])
@pytest.mark.parametrize("texts", [["a", "b c"], ['é\n"quoted"\\ \u2028 \x00', ""], ["😀" * 3]])
def test_the_chunk_template_writes_what_the_general_path_writes(dialect: Any, texts: list[str]) -> None:
    events = [chunk(t) for t in texts]
    general = encode_notifications("session/update", dialect.events(events))
    assert dialect.encode_updates(events) == general


@pytest.mark.req("R-ZC-2")
def test_mixed_batches_take_the_general_path() -> None:
    events = [chunk("a"), EVENTS[1][0]]
    assert STANDARD.encode_updates(events) == encode_notifications("session/update", STANDARD.events(events))


ARGUMENTS = {"command": "ls", "snake_case_key": 1, "nested": {"inner_key": [{"deep_key": True}]}}
ZEROCLAW_EVENTS = {
    "agent_message_chunk": {"type": "agent_message_chunk", "session_id": "s1", "text": "hi"},
    "agent_thought_chunk": {"type": "agent_thought_chunk", "session_id": "s1", "text": "hm"},
    "tool_call": {
        "type": "tool_call",
        "session_id": "s1",
        "tool_call_id": "c1",
        "name": "bash",
        "raw_input": ARGUMENTS,
    },
    "tool_result": {
        "type": "tool_result",
        "session_id": "s1",
        "tool_call_id": "c1",
        "name": "bash",
        "raw_output": "ok",
    },
    "approval_request": {
        "type": "approval_request",
        "session_id": "s1",
        "request_id": "r1",
        "tool_name": "bash",
        "arguments_summary": orjson.dumps(ARGUMENTS).decode(),  # a string (zc:client.rs:325-331)
        "timeout_secs": 120,  # an integer: 120.0 would be read as 30
    },
    "turn_complete": {"type": "turn_complete", "session_id": "s1", "outcome": "completed", "content": "done"},
    "history_trimmed": {
        "type": "history_trimmed",
        "session_id": "s1",
        "dropped_messages": 4,
        "kept_turns": 1,
        "reason": "history message limit exceeded",
    },
}


@pytest.mark.req("R-ZC-2")
def test_every_event_is_written_as_zeroclaw_0_8_4_writes_it() -> None:
    for event, _ in EVENTS:
        unknown = event["type"] in ("approval_resolved", "usage")  # ZeroClaw 0.8.4 has neither
        expected = [] if unknown else [ZEROCLAW_EVENTS[event["type"]]]
        assert ZEROCODE.events([event]) == expected, event["type"]


@pytest.mark.req("R-MULTI-1")
def test_the_zerocode_dialect_numbers_no_update_and_the_standard_one_every_update() -> None:
    chunks: Any = [
        {"session_id": "s1", "type": "agent_message_chunk", "text": t, "seq": n} for n, t in ((4, "a"), (5, "b"))
    ]
    standard = [orjson.loads(frame)["params"] for frame in STANDARD.encode_updates(chunks)]
    assert [p["seq"] for p in standard] == [4, 5] and [p["text"] for p in standard] == ["a", "b"]
    assert all("seq" not in orjson.loads(frame)["params"] for frame in ZEROCODE.encode_updates(chunks))
    end = {"session_id": "s1", "type": "turn_complete", "stop_reason": "end_turn", "content": "ab", "seq": 6}
    mixed: Any = [*chunks, end]
    assert [orjson.loads(f)["params"]["seq"] for f in STANDARD.encode_updates(mixed)] == [4, 5, 6]
    assert all("seq" not in orjson.loads(frame)["params"] for frame in ZEROCODE.encode_updates(mixed))


@pytest.mark.req("R-ZC-2")
@pytest.mark.parametrize(
    ("stop_reason", "cause", "outcome", "content"),
    [
        ("end_turn", None, "completed", "the text"),
        ("max_turns", None, "completed", "the text"),
        ("cancelled", "client_rpc", "cancelled", "turn cancelled via client_rpc in RPC_SESSION s1"),
        ("cancelled", "admin_kill", "cancelled", "turn cancelled via admin_kill in RPC_SESSION s1"),
        ("cancelled", None, "cancelled", "turn cancelled (cause unattributed) in RPC_SESSION s1"),
        ("failed", None, "failed", "turn failed: the text"),
    ],
)
def test_turn_complete_says_how_the_turn_ended(stop_reason: str, cause: str | None, outcome: str, content: str) -> None:
    sessions = SimpleNamespace(live={"s1": SimpleNamespace(cancel_cause=cause)})
    event: Any = {"session_id": "s1", "type": "turn_complete", "stop_reason": stop_reason, "content": "the text"}
    (wire,) = ZEROCODE.events([event], sessions)  # type: ignore[arg-type]
    assert (wire["outcome"], wire["content"]) == (outcome, content)


@pytest.mark.req("R-ZC-1")
@pytest.mark.parametrize(
    ("params", "zerocode"),
    [
        ({"protocol_version": 1, "clientCapabilities": {}, "env": {"HOME": "/h"}}, True),
        ({"protocol_version": 1, "tui_id": "tui_0a1b2c3d", "tui_sig": "x", "env": {}}, True),
        ({"protocol_version": 1, "tui_id": "tui_0a1b2c3d"}, True),
        ({"protocol_version": 1}, False),  # a generic client writing snake_case keeps camelCase (R-WIRE-8)
        ({"protocolVersion": 1, "env": {}}, False),
        ({"protocol_version": 1, "env": "not an object"}, False),
        ([1], False),
        (None, False),
    ],
)
def test_the_dialect_is_chosen_by_zerocode_s_own_initialize_shape(params: Any, zerocode: bool) -> None:
    assert speaks_zerocode(params) is zerocode


@pytest.mark.req("R-ZC-5")
def test_a_one_of_options_question_becomes_a_choice_form_and_its_answer_the_option() -> None:
    schema = {"type": "object", "properties": {"choice": {"type": "string", "enum": ["red", "blue"]}}}
    question = ZEROCODE.question(schema)
    assert question is not None
    assert question.schema["properties"]["choice"]["oneOf"] == [
        {"const": "choice-0", "title": "red"},
        {"const": "choice-1", "title": "blue"},
    ]
    assert question.schema["required"] == ["choice"]
    assert question.decode({"choice": "choice-1"}) == {"choice": "blue"}
    for bad in ({"choice": "choice-2"}, {"choice": "blue"}, {"choice": "choice-x"}, {}):
        assert question.decode(bad) is None
    assert STANDARD.question(schema) is not None and STANDARD.question(schema).schema is schema  # type: ignore[union-attr]


@pytest.mark.req("R-ZC-5")
def test_a_free_form_question_cannot_be_shown_to_zerocode() -> None:
    assert ZEROCODE.question({"type": "object", "properties": {"answer": {"type": "string"}}}) is None


REGISTRY = build_registry()


def _adapted(name: str) -> Any:
    spec = REGISTRY.get(name)
    assert spec is not None
    return ZEROCODE.adapt(spec)


@pytest.mark.req("R-ZC-4")
def test_the_dialect_wraps_each_entry_once_and_leaves_the_others() -> None:
    assert _adapted("session/new") is _adapted("session/new")
    config_get = REGISTRY.get("config/get")
    assert ZEROCODE.adapt(config_get) is config_get
    assert STANDARD.adapt(config_get) is config_get
    assert _adapted("status").is_async is False and _adapted("session/new").is_async is True


@pytest.mark.req("R-ZC-5")
def test_approve_takes_zeroclaw_s_decisions_and_acknowledges_an_unknown_request() -> None:
    spec = _adapted("session/approve")
    assert spec.params is ZeroCodeApproveParams
    seen: list[tuple[str, str | None]] = []

    def approve(principal: Any, sid: str, rid: str, decision: str, replacement: str | None = None) -> None:
        if rid == "gone":
            raise ApprovalNotFound
        seen.append((decision, replacement))

    ctx: Any = SimpleNamespace(
        principal="p", services=SimpleNamespace(sessions=SimpleNamespace(turns=SimpleNamespace(approve=approve)))
    )
    once = spec.params_from({"session_id": "s1", "request_id": "ap_1", "decision": "reject_once"})
    assert spec.handler(ctx, once) == {"session_id": "s1", "request_id": "ap_1", "acknowledged": True}
    edit = spec.params_from(
        {"session_id": "s1", "request_id": "ap_2", "decision": "reject_with_edit", "replacement": "x"}
    )
    spec.handler(ctx, edit)
    assert seen == [("reject", None), ("reject_with_edit", "x")]
    gone = spec.params_from({"session_id": "s1", "request_id": "gone", "decision": "allow_once"})
    assert spec.handler(ctx, gone) == {"session_id": "s1", "request_id": "gone", "acknowledged": True}


@pytest.mark.req("R-ZC-4")
def test_new_makes_a_chat_session_unless_chat_mode_says_acp() -> None:
    spec = _adapted("session/new")
    opened: list[str] = []

    async def new(ctx: Any, params: NewParams) -> AfterReply:
        opened.append(params.mode)
        info = {"session_id": "s", "agent_alias": "a", "mode": params.mode, "message_count": 0, "workspace_dir": "/w"}
        return AfterReply(info, lambda: None)

    wrapped = ZEROCODE.adapt(
        REGISTRY.get("session/new").__class__(  # type: ignore[union-attr]
            "session/new", new, NewParams, "sessions:create"
        )
    )
    for params in ({"agent_alias": "a"}, {"agent_alias": "a", "chat_mode": "acp"}):
        result = asyncio.run(wrapped.handler(None, wrapped.params_from(params)))
        assert isinstance(result, AfterReply)
        assert result.result == {"session_id": "s", "agent_alias": "a", "message_count": 0, "workspace_dir": "/w"}
    # The dialect's own model: NewParams with chat as the default mode.
    assert opened == ["chat", "acp"] and issubclass(spec.params, NewParams) and spec.params().mode == "chat"


@pytest.mark.req("R-WIRE-8")
def test_chat_mode_and_before_index_are_accepted_from_any_client() -> None:
    assert validate(NewParams, {"chat_mode": "chat"}).mode == "chat"
    assert validate(NewParams, {"chatMode": "chat", "mode": "acp"}).mode == "acp"  # the first spelling wins
    assert validate(NewParams, {}).mode == "acp"
    messages = REGISTRY.get("session/messages")
    assert messages is not None
    assert messages.params_from({"session_id": "s", "before_index": 7}).before == 7  # type: ignore[attr-defined]
