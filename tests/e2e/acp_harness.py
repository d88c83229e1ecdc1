"""The ACP Python SDK's own client (`agent-client-protocol`) driving `zeroclaw acp` (tests/e2e/test_e2e_acp.py).

`open_acp(daemon)` spawns `zeroclaw acp --config-dir DIR` with the SDK's `spawn_agent_process`; `Recorder` is the
editor's side: it keeps every update the SDK parsed into its models, answers `session/request_permission` with
the option a test queued, and sees every raw frame (`frames`), `$/cancel_request` included.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from acp import RequestPermissionResponse, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamEvent
from acp.schema import (
    AcceptElicitationResponse,
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)
from e2e_harness import Daemon, zeroclaw_command
from waiting import WaitTimeout, until

TIMEOUT = 15.0
FRAME_LIMIT = 64 * 1024 * 1024


class Recorder:
    """The editor: updates as the SDK parsed them, permission requests it was asked, raw frames both ways."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[tuple[str, ToolCallUpdate, list[PermissionOption]]] = []
        self.answers: list[str | None] = []  # option ids to choose, in order; None: cancelled
        self.hold: asyncio.Event | None = None  # while set to an unset event, permission requests wait
        self.frames: list[tuple[str, dict[str, Any]]] = []
        self.asked = asyncio.Event()
        self.questions: list[tuple[str, Any]] = []
        self.form_answer: dict[str, Any] = {}

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((session_id, tool_call, options))
        self.asked.set()
        if self.hold is not None:
            await self.hold.wait()
        choice = self.answers.pop(0) if self.answers else "allow_once"
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> AcceptElicitationResponse:
        self.questions.append((message, mode))
        return AcceptElicitationResponse(action="accept", content=dict(self.form_answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.updates.append(("_" + method, params))

    def observe(self, event: StreamEvent) -> None:
        self.frames.append((event.direction.value, event.message))

    # -- reading what came

    def of(self, session_id: str, *kinds: type) -> list[Any]:
        return [u for sid, u in self.updates if sid == session_id and (not kinds or isinstance(u, kinds))]

    def text(self, session_id: str) -> str:
        return "".join(u.content.text for u in self.of(session_id, AgentMessageChunk))

    def raw_updates(self) -> list[dict[str, Any]]:
        return [m for d, m in self.frames if m.get("method") == "session/update" and d == "incoming"]

    async def wait(self, predicate: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
        try:
            return await until(predicate, timeout, interval=0.02)
        except WaitTimeout:
            raise WaitTimeout(f"timed out waiting for {what}; updates: {self.updates[-5:]}") from None


KINDS = (UserMessageChunk, AgentMessageChunk, AgentThoughtChunk, ToolCallStart, ToolCallProgress, UsageUpdate)


@contextlib.asynccontextmanager
async def open_acp(
    daemon: Daemon, *args: str, stderr: Any = None, unstable: bool = False
) -> AsyncIterator[tuple[ClientSideConnection, Recorder, asyncio.subprocess.Process]]:
    """`zeroclaw acp --config-dir DIR` spawned by the SDK, not yet initialized (`unstable`: the SDK's client
    answers `elicitation/create`)."""
    recorder = Recorder()
    command, *prefix = zeroclaw_command()
    config = ["--config-dir", str(daemon.config_dir)] if daemon.config_dir is not None else []
    kwargs: dict[str, Any] = {"limit": FRAME_LIMIT}
    if stderr is not None:
        kwargs["stderr"] = stderr
    async with spawn_agent_process(
        lambda _agent: recorder,
        command,
        *prefix,
        "acp",
        *config,
        *args,
        env=daemon.env,
        transport_kwargs=kwargs,
        observers=[recorder.observe],
        use_unstable_protocol=unstable,  # `elicitation/create` is in the SDK's unstable part of v1
    ) as (conn, process):
        yield conn, recorder, process


async def initialized(conn: ClientSideConnection, version: int = 1, **caps: Any) -> Any:
    return await asyncio.wait_for(
        conn.initialize(
            protocol_version=version,
            client_capabilities=ClientCapabilities(**caps),
            client_info=Implementation(name="acp-sdk-test", version="1"),
        ),
        TIMEOUT,
    )
