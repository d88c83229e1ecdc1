"""The generated Python client's hand-written transport (`clients/python/zeroclaw_client/_transport.py`, R-ECO-3),
over an in-memory channel: calls by id with optional params left out, errors as `RpcError`, notifications to their
handlers in order (a failing handler is logged, not the connection's end), the daemon's requests answered exactly
once (no handler: -32601; a handler's RpcError as the error), pending calls failed when the connection closes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))

from zeroclaw_client import ConnectionClosed, RpcError, ZeroclawClient
from zeroclaw_client.types import ElicitationCreateParams, ElicitationCreateResult, SessionUpdateParams

pytestmark = pytest.mark.req("R-ECO-3")


class MemoryChannel:
    """The client's side; the test plays the daemon through `sent` and `incoming`."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.closed = False

    async def send(self, text: str) -> None:
        self.sent.put_nowait(json.loads(text))

    async def receive(self) -> str | None:
        return await self.incoming.get()

    async def close(self) -> None:
        self.closed = True

    def deliver(self, message: dict[str, Any]) -> None:
        self.incoming.put_nowait(json.dumps(message))

    async def next_sent(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.sent.get(), 5)


async def test_a_call_sends_by_name_leaves_out_none_and_returns_the_result() -> None:
    channel = MemoryChannel()
    async with ZeroclawClient(channel) as client:
        call = asyncio.ensure_future(client.session_messages(session_id="s_1", limit=5))
        sent = await channel.next_sent()
        assert sent == {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/messages",
            "params": {"sessionId": "s_1", "limit": 5},
        }
        channel.deliver({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s_1", "messages": [], "total": 0}})
        assert (await call)["total"] == 0
    assert channel.closed


async def test_an_error_answer_raises_rpc_error_and_a_closed_connection_fails_the_call() -> None:
    channel = MemoryChannel()
    async with ZeroclawClient(channel) as client:
        call = asyncio.ensure_future(client.status())
        sent = await channel.next_sent()
        error = {"code": -32012, "message": "Forbidden", "data": {"kind": "forbidden"}}
        channel.deliver({"jsonrpc": "2.0", "id": sent["id"], "error": error})
        with pytest.raises(RpcError) as raised:
            await call
        assert (raised.value.code, raised.value.data) == (-32012, {"kind": "forbidden"})
        call = asyncio.ensure_future(client.status())
        await channel.next_sent()
        channel.incoming.put_nowait(None)  # the daemon hung up
        with pytest.raises(ConnectionClosed):
            await call
        with pytest.raises(ConnectionClosed):
            await client.status()


async def test_notifications_reach_their_handlers_in_order_and_a_failing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    channel = MemoryChannel()
    async with ZeroclawClient(channel) as client:
        seen: list[str] = []

        def broken(update: SessionUpdateParams) -> None:
            raise ValueError("a bug in the handler")

        def text(update: SessionUpdateParams) -> None:
            if update["type"] == "agent_message_chunk":
                seen.append(update["text"])

        client.on_session_update(broken)
        client.on_session_update(text)
        for n in range(3):
            update = {"sessionId": "s", "type": "agent_message_chunk", "seq": n, "text": f"t{n}"}
            channel.deliver({"jsonrpc": "2.0", "method": "session/update", "params": update})
        call = asyncio.ensure_future(client.status())  # a barrier: answered after what came before it
        channel.deliver({"jsonrpc": "2.0", "id": (await channel.next_sent())["id"], "result": {}})
        await call
    assert seen == ["t0", "t1", "t2"]
    assert "the session/update handler failed" in caplog.text


async def test_the_daemons_requests_are_answered_once_by_the_registered_handler() -> None:
    channel = MemoryChannel()
    async with ZeroclawClient(channel) as client:
        question = {"sessionId": "s", "mode": "form", "message": "colour?", "requestedSchema": {}}
        channel.deliver({"jsonrpc": "2.0", "id": "zc-out-0", "method": "elicitation/create", "params": question})
        assert await channel.next_sent() == {
            "jsonrpc": "2.0",
            "id": "zc-out-0",
            "error": {"code": -32601, "message": "Method not found: elicitation/create"},
        }

        async def answer(asked: ElicitationCreateParams) -> ElicitationCreateResult:
            if asked["message"] == "refuse?":
                raise RpcError(-32000, "no", {"kind": "refused"})
            return {"action": "accept", "content": {"answer": "teal"}}

        client.on_elicitation_create(answer)
        channel.deliver({"jsonrpc": "2.0", "id": "zc-out-1", "method": "elicitation/create", "params": question})
        assert await channel.next_sent() == {
            "jsonrpc": "2.0",
            "id": "zc-out-1",
            "result": {"action": "accept", "content": {"answer": "teal"}},
        }
        refused = {**question, "message": "refuse?"}
        channel.deliver({"jsonrpc": "2.0", "id": "zc-out-2", "method": "elicitation/create", "params": refused})
        assert (await channel.next_sent())["error"] == {"code": -32000, "message": "no", "data": {"kind": "refused"}}


def test_the_default_socket_is_the_daemons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As the daemon resolves its endpoint (docs/config.md): $ZEROCLAW_SOCKET, else <config dir>/data/daemon.sock
    ($ZEROCLAW_CONFIG_DIR, or ~/.zeroclaw with $ZEROCLAW_DATA_DIR for its data)."""
    from zeroclaw_client import default_socket

    for name in ("ZEROCLAW_SOCKET", "ZEROCLAW_CONFIG_DIR", "ZEROCLAW_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_socket() == tmp_path / ".zeroclaw" / "data" / "daemon.sock"
    monkeypatch.setenv("ZEROCLAW_DATA_DIR", str(tmp_path / "d"))
    assert default_socket() == tmp_path / "d" / "daemon.sock"
    monkeypatch.setenv("ZEROCLAW_CONFIG_DIR", str(tmp_path / "c"))
    assert default_socket() == tmp_path / "c" / "data" / "daemon.sock"
    monkeypatch.setenv("ZEROCLAW_SOCKET", "/run/z.sock")
    assert default_socket() == Path("/run/z.sock")
