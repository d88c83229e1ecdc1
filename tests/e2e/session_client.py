"""A concurrent JSON-RPC peer for the session / streaming / config e2e tests.

`e2e_harness.Client` reads frames in the caller's task, which is fine for one request at a time. The session
tests need more: a prompt in flight while the test approves, cancels or answers an `elicitation/create` the
daemon sent on the same connection. `Peer` runs one reader task per connection that routes every frame:

* responses complete the future of the request with that id (our ids only: the daemon's `zc-out-*` requests
  live in a separate table, R-BIDI-2);
* `session/update` notifications go to `updates` (all other notifications to `notifications`);
* daemon → client requests go to `daemon_requests`; `answer` (if set) is called with each one and its return
  value is sent back as the `result` (return `NO_ANSWER` to leave the request unanswered).

`check_turn` asserts the R-STREAM invariants every finished turn must keep. Every wait takes a timeout, so no
test can hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from e2e_harness import Client, Daemon, RpcFailure

__all__ = [
    "NO_ANSWER",
    "TOKEN_USER_CONFIG",
    "Peer",
    "Turn",
    "check_turn",
    "chunks_text",
    "open_token_peer",
    "pair",
]

TIMEOUT = 10.0
NO_ANSWER = object()

# A user reachable only by a pairing token (no uid): may create, prompt and read sessions with any agent.
TOKEN_USER_CONFIG = """
[permission_profiles.runner]
grants = { sessions = ["create", "execute", "read"] }
allowed_agents = ["*"]

[users.alice]
permission_profiles = ["runner"]

[users.bob]
permission_profiles = ["runner"]
"""


@dataclass
class Turn:
    """One finished `session/prompt`: its response frame and the updates of that turn (turn_complete last)."""

    response: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.response, self.response
        return self.response["result"]  # type: ignore[no-any-return]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("type") == kind]

    @property
    def types(self) -> list[str]:
        return [u.get("type", "?") for u in self.updates]


UPDATE_FIELDS: dict[str, set[str]] = {
    "agent_message_chunk": {"text"},
    "agent_thought_chunk": {"text"},
    "tool_call": {"toolCallId", "name", "rawInput"},
    "tool_result": {"toolCallId", "name", "rawOutput"},
    "approval_request": {"requestId", "toolName", "arguments", "timeoutSecs"},
    "approval_resolved": {"requestId", "decision"},
    "history_trimmed": {"droppedMessages", "keptMessages", "checkpoint"},
    "turn_complete": {"stopReason", "content", "usage"},
    "usage": {"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "costUsd"},
    "config_changed": {"agentAlias", "model", "temperature"},
    "tool_progress": {"toolCallId", "progress", "total", "message"},
}


def check_turn(turn: Turn, session_id: str, stop: str = "end_turn") -> dict[str, Any]:
    """The R-STREAM invariants of one finished turn; returns the prompt result."""
    assert "result" in turn.response, f"a turn never ends in a JSON-RPC error: {turn.response}"
    result = turn.result
    assert result["sessionId"] == session_id
    assert result["stopReason"] == stop, (result, turn.types)
    assert turn.updates, "no session/update at all"
    for u in turn.updates:
        assert u["sessionId"] == session_id, u
        assert u["type"] in UPDATE_FIELDS, u
        assert UPDATE_FIELDS[u["type"]] <= set(u), u
    # R-MULTI-1: numbered per session, +1 each, none skipped within a turn
    seqs = [u["seq"] for u in turn.updates]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and seqs[0] >= 1, seqs
    last = turn.updates[-1]
    assert last["type"] == "turn_complete", turn.types
    assert turn.types.count("turn_complete") == 1, turn.types
    assert last["stopReason"] == result["stopReason"]
    assert last["content"] == result["content"]
    assert chunks_text(turn.updates) == result["content"], (turn.updates, result)
    # R-MODEL-5: `turn_complete.usage` sums the turn's `usage` updates (one per provider step)
    steps = turn.of_type("usage")
    for key in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"):
        assert last["usage"][key] == sum(u[key] for u in steps), (last, steps)
    # per tool: tool_call, then (maybe) approval_request, then tool_result
    for i, u in enumerate(turn.updates):
        if u["type"] == "tool_result":
            calls = [
                j for j, c in enumerate(turn.updates) if c["type"] == "tool_call" and c["toolCallId"] == u["toolCallId"]
            ]
            assert len(calls) == 1 and calls[0] < i, turn.types
            assert turn.updates[calls[0]]["name"] == u["name"]
            between = [c["type"] for c in turn.updates[calls[0] + 1 : i] if c["type"] != "tool_progress"]
            assert between in ([], ["approval_request", "approval_resolved"]), turn.types
        if u["type"] == "approval_request":
            assert i > 0 and turn.updates[i - 1]["type"] == "tool_call", turn.types
            assert turn.updates[i - 1]["name"] == u["toolName"]
            # R-MULTI-3: settled, by an answer or the timeout, before the tool's result (or the turn was cancelled)
            settled = turn.updates[i + 1]
            if settled["type"] == "approval_resolved":
                assert settled["requestId"] == u["requestId"], turn.types
            else:
                assert settled["type"] == "turn_complete" and settled["stopReason"] == "cancelled", turn.types
    return result


def chunks_text(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["text"] for u in updates if u.get("type") == kind)


class Peer:
    """One connection with a background reader; see the module docstring."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.frames: list[dict[str, Any]] = []  # everything received, in order
        self.updates: list[dict[str, Any]] = []  # session/update params
        self.notifications: list[dict[str, Any]] = []  # other notifications (whole frames)
        self.daemon_requests: list[dict[str, Any]] = []  # daemon → client requests (whole frames)
        self.answer: Callable[[dict[str, Any]], Any] | None = None
        self.eof = False
        self._changed = asyncio.Condition()
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    # -- opening ---------------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        daemon: Daemon,
        *,
        elicitation: bool = False,
        token: str | None = None,
        answer: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Peer:
        """A connection that has called `initialize` (with the elicitation capability and/or a token)."""
        peer = cls(await daemon.connect())
        peer.answer = answer
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": "e2e", "version": "0"}}
        if elicitation:
            params["clientCapabilities"] = {"elicitation": {}}
        if token is not None:
            params["authToken"] = token
        await peer.call("initialize", params)
        return peer

    async def __aenter__(self) -> Peer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.client.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._reader, 2)

    # -- reading ---------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                try:
                    line = await self.client.reader.readline()
                except (ConnectionResetError, BrokenPipeError, ValueError):
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                frame = json.loads(line)
                self.client.saw(frame)
                await self._route(frame)
        finally:
            self.eof = True
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(AssertionError("the daemon closed the connection"))
            async with self._changed:
                self._changed.notify_all()

    async def _route(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        if "method" in frame and "id" in frame:
            self.daemon_requests.append(frame)
            if self.answer is not None:
                result = self.answer(frame)
                if result is not NO_ANSWER:
                    await self.respond(frame["id"], result)
        elif "method" in frame:
            if frame["method"] == "session/update":
                self.updates.append(frame["params"])
            else:
                self.notifications.append(frame)
        else:
            fut = self._pending.pop(frame.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(frame)
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
        """Wait until `predicate()` is truthy (re-checked after every frame); returns its value."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{what} not seen within {timeout} s; updates={self.updates[-20:]}")
                if self.eof:
                    raise AssertionError(f"{what}: the connection closed first; updates={self.updates[-20:]}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_update(
        self, kind: str, *, session_id: str | None = None, start: int = 0, timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        """The first `session/update` of type `kind` (at or after index `start` of `updates`)."""

        def find() -> dict[str, Any] | None:
            for u in self.updates[start:]:
                if u.get("type") == kind and (session_id is None or u.get("sessionId") == session_id):
                    return u
            return None

        return await self.wait_for(find, timeout, what=f"session/update {kind!r}")  # type: ignore[no-any-return]

    async def wait_daemon_request(self, start: int = 0, timeout: float = TIMEOUT) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            return self.daemon_requests[start] if len(self.daemon_requests) > start else None

        return await self.wait_for(find, timeout, what="a daemon → client request")  # type: ignore[no-any-return]

    # -- sending ---------------------------------------------------------------------------------------

    async def send(self, frame: dict[str, Any]) -> None:
        await self.client.send(frame)

    async def respond(self, rid: Any, result: Any = None, *, error: dict[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if error is not None:
            frame["error"] = error
        else:
            frame["result"] = result
        await self.send(frame)

    async def start(self, method: str, params: Any = None, *, id: Any = ...) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the returned future resolves to its whole response frame."""
        rid = next(self._ids) if id is ... else id
        assert rid not in self._pending, f"id {rid!r} already in flight"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        # a request the test never awaits (its connection closed first) must not log "exception never retrieved"
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._pending[rid] = fut
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
        if params is not None:
            frame["params"] = params
        await self.send(frame)
        return fut

    async def request(self, method: str, params: Any = None, *, timeout: float = TIMEOUT, id: Any = ...) -> Any:
        """The whole response frame."""
        fut = await self.start(method, params, id=id)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise AssertionError(f"no answer to {method} within {timeout} s") from None

    async def call(self, method: str, params: Any = None, *, timeout: float = TIMEOUT) -> Any:
        """The result, or `RpcFailure`."""
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            raise RpcFailure(response)
        assert "result" in response, response
        return response["result"]

    async def error(self, method: str, params: Any = None, *, timeout: float = TIMEOUT) -> tuple[int, dict[str, Any]]:
        """(code, data) of a call that must fail."""
        response = await self.request(method, params, timeout=timeout)
        assert "error" in response, f"{method} {params} should have failed: {response}"
        err = response["error"]
        return err["code"], err.get("data") or {}

    # -- sessions --------------------------------------------------------------------------------------

    async def new_session(self, **params: Any) -> dict[str, Any]:
        return await self.call("session/new", params)  # type: ignore[no-any-return]

    async def start_prompt(self, session_id: str, prompt: str) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """Send `session/prompt`; (index into `updates` where this turn's updates start, response future)."""
        mark = len(self.updates)
        fut = await self.start("session/prompt", {"sessionId": session_id, "prompt": prompt})
        return mark, fut

    async def finish_turn(
        self, session_id: str, mark: int, fut: asyncio.Future[dict[str, Any]], timeout: float = TIMEOUT
    ) -> Turn:
        """Wait for the prompt's response and its `turn_complete`; the turn's updates end with it."""
        try:
            response = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise AssertionError(
                f"session/prompt not answered within {timeout} s; updates={self.updates[mark:]}"
            ) from None
        if "error" in response:
            return Turn(response, [])
        await self.wait_update("turn_complete", session_id=session_id, start=mark, timeout=timeout)
        return Turn(response, self.turn_updates(session_id, mark))

    def turn_updates(self, session_id: str, mark: int) -> list[dict[str, Any]]:
        """This session's updates from `mark` up to and including the first `turn_complete`."""
        out: list[dict[str, Any]] = []
        for u in self.updates[mark:]:
            if u.get("sessionId") != session_id:
                continue
            out.append(u)
            if u.get("type") == "turn_complete":
                break
        return out

    async def prompt(self, session_id: str, prompt: str, timeout: float = TIMEOUT) -> Turn:
        mark, fut = await self.start_prompt(session_id, prompt)
        return await self.finish_turn(session_id, mark, fut, timeout)


async def new_sid(peer: Peer, **params: Any) -> str:
    """`session/new` and just its id."""
    return (await peer.new_session(**params))["sessionId"]  # type: ignore[no-any-return]


async def pair(owner: Peer, user: str, label: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"user": user}
    if label is not None:
        params["label"] = label
    return await owner.call("pairing/create", params)  # type: ignore[no-any-return]


async def open_token_peer(daemon: Daemon, owner: Peer, user: str, **kw: Any) -> Peer:
    """A connection acting as `user` through a fresh pairing token created by `owner`."""
    token = (await pair(owner, user))["token"]
    return await Peer.open(daemon, token=token, **kw)
