"""The generated Python client (`clients/python`, R-ECO-3, R-ECO-4) drives a real `zeroclaw daemon`: over its
Unix socket (initialize, session/new, session/prompt with the streamed updates through the typed handler, an
approval answered by a registered handler, the daemon's `elicitation/create` answered by another,
session/messages) and over the gateway's WebSocket with a paired token. Imported from the repository's
`clients/python`, as a fresh clone has it (no install step)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))

from zeroclaw_client import RpcError, answer_approvals, connect_unix, connect_websocket
from zeroclaw_client.types import (
    ApprovalRequestUpdate,
    ElicitationCreateParams,
    ElicitationCreateResult,
    SessionApproveParamsDecision,
    SessionUpdateParams,
)

pytestmark = [
    pytest.mark.req("R-ECO-3"),
    pytest.mark.req("R-ECO-4"),
    pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"),
]


def _text(updates: list[SessionUpdateParams], sid: str) -> str:
    return "".join(u["text"] for u in updates if u["type"] == "agent_message_chunk" and u["sessionId"] == sid)


async def test_the_generated_client_drives_a_session_over_the_socket(daemon: Daemon) -> None:
    async with await connect_unix(daemon.socket_path) as client:
        updates: list[SessionUpdateParams] = []
        client.on_session_update(updates.append)
        asked: list[ApprovalRequestUpdate] = []

        async def decide(request: ApprovalRequestUpdate) -> SessionApproveParamsDecision:
            asked.append(request)
            return "allow_once"

        answer_approvals(client, decide)
        sid = (await client.session_new(agent_alias="default"))["sessionId"]

        said = await client.session_prompt(session_id=sid, prompt="hello there")
        assert said["stopReason"] == "end_turn" and "hello there" in said["content"]
        assert _text(updates, sid) == said["content"]
        assert [u["type"] for u in updates][-1] == "turn_complete"

        updates.clear()
        ran = await client.session_prompt(session_id=sid, prompt="/bash echo hi")
        assert ran["stopReason"] == "end_turn" and "hi" in ran["content"]
        assert [(a["toolName"], a["arguments"]) for a in asked] == [("bash", {"command": "echo hi"})]
        kinds = [u["type"] for u in updates]
        assert "approval_request" in kinds and "approval_resolved" in kinds and "tool_result" in kinds

        page = await client.session_messages(session_id=sid)
        assert page["sessionId"] == sid and page["total"] == len(page["messages"]) >= 4
        assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["hello there", "/bash echo hi"]

        with pytest.raises(RpcError) as refused:
            await client.session_messages(session_id="s_never_was")
        assert refused.value.code == -32000 and refused.value.data["kind"] == "session_not_found"


async def test_the_daemon_asks_and_a_registered_handler_answers(daemon: Daemon) -> None:
    """`elicitation/create` (R-BIDI): the daemon's request reaches `on_elicitation_create`, its answer the tool."""
    client = await connect_unix(daemon.socket_path, capabilities={"elicitation": {}})
    async with client:
        questions: list[ElicitationCreateParams] = []

        async def answer(question: ElicitationCreateParams) -> ElicitationCreateResult:
            questions.append(question)
            return {"action": "accept", "content": {"answer": "teal"}}

        client.on_elicitation_create(answer)
        sid = (await client.session_new())["sessionId"]
        result = await client.session_prompt(session_id=sid, prompt="/ask favourite colour?")
    assert result["stopReason"] == "end_turn" and "teal" in result["content"]
    assert [(q["sessionId"], q["message"]) for q in questions] == [(sid, "favourite colour?")]


OPS_TOML = """
[permission_profiles.admin]
admin = true

[users.ops]
permission_profiles = ["admin"]
"""


async def test_the_generated_client_over_the_gateway_websocket(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(OPS_TOML, no_gateway=False, args=["--gateway-port", "0"])
    ready = READY_RE.match(daemon.ready_line or "")
    assert ready is not None and ready["gateway"] != "off"
    async with await connect_unix(daemon.socket_path) as owner:
        token = (await owner.pairing_create(user="ops"))["token"]
    url = "ws" + ready["gateway"].removeprefix("http") + "/rpc"
    async with await connect_websocket(url, token=token) as client:
        status = await client.status()
        assert status["connections"] >= 1
        sid = (await client.session_new())["sessionId"]
        said = await client.session_prompt(session_id=sid, prompt="over the gateway")
        assert "over the gateway" in said["content"]
