"""One connection to one MCP server with the official `mcp` SDK (imported here, on first use: R-MCP-1).

The connection lives in a task of its own (the SDK's transports are anyio context managers, entered and left in
one task); calls from turns go through the live `ClientSession`. A crash ends the task: the next call starts it
again (R-MCP-4)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from app.agents.base import Elicitation
from app.agents.mcp.floor import Floor
from app.config.schema import McpServer

__all__ = ["Connection", "StartFailed", "render_result"]

log = logging.getLogger("zeroclaw.mcp")

_LAUNCHER = str(Path(__file__).with_name("launch.py"))

Elicit = Callable[[str, dict[str, Any]], Awaitable[Elicitation]]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class StartFailed(RuntimeError):
    """The server did not start; `str()` says why (no secrets: the command's environment and headers are not in
    it)."""


class Connection:
    """A running (or starting) server. `tools`: its tool list after the handshake (and after `list_changed`);
    `floor`: whose calls run now, and where an elicitation goes (app.agents.mcp.floor)."""

    def __init__(self, name: str, server: McpServer) -> None:
        self.name = name
        self.server = server
        self.tools: list[types.Tool] = []
        self.session: ClientSession | None = None
        self.floor: Floor[Elicit] = Floor()
        self._listing: asyncio.Task[None] | None = None  # listing the tools again after `list_changed`
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self.error: str | None = None  # why it stopped, when it crashed
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp:{name}")

    @property
    def alive(self) -> bool:
        return not self.task.done() and not self._stop.is_set()

    async def wait_ready(self, timeout: float) -> None:
        await asyncio.wait_for(asyncio.shield(self._ready), timeout)

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        s = self.server
        if s.url:
            from mcp.shared._httpx_utils import create_mcp_http_client  # the SDK's own client, with headers

            headers = {k: v.get_secret_value() for k, v in s.headers.items()}
            client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            streams = await stack.enter_async_context(streamable_http_client(s.url, http_client=client))
        else:
            env = dict(os.environ) | {k: v.get_secret_value() for k, v in s.env.items()}
            env["ZEROCLAW_MCP_PARENT"] = str(os.getpid())
            params = StdioServerParameters(
                command=sys.executable, args=["-S", _LAUNCHER, s.command or "", *s.args], env=env, cwd=s.cwd
            )
            streams = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        return streams[0], streams[1]

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(read, write, elicitation_callback=self._on_elicit, message_handler=self._on_message)
                )
                await session.initialize()
                self.tools = (await session.list_tools()).tools
                self.session = session
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(StartFailed(_why(exc)))
            if not isinstance(exc, asyncio.CancelledError):
                self.error = _why(exc)
                log.warning("MCP server %r stopped: %s", self.name, _why(exc))
        finally:
            self.session = None
            if not self._ready.done():
                self._ready.set_exception(StartFailed("it stopped while starting"))
            if not self._ready.cancelled() and self._ready.exception() is not None:
                pass  # retrieved: a start that failed is reported by `wait_ready`, or never asked about

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self.session is not None:
            # Begun before anything is awaited: the SDK runs this in a task started as the notification is read,
            # so before the answer to the call that changed the list (sent after it) reaches the turn, and the
            # turn's next step waits for it (`listed`).
            self._listing = asyncio.get_running_loop().create_task(self._list_again(self.session))

    async def _list_again(self, session: ClientSession) -> None:
        try:
            self.tools = (await session.list_tools()).tools
        except Exception:
            log.warning("MCP server %r: could not list its tools again", self.name, exc_info=True)

    async def listed(self) -> list[types.Tool]:
        """The tool list, once a re-listing after `list_changed` is done."""
        listing = self._listing
        if listing is not None:
            await asyncio.wait({listing}, timeout=self.server.call_timeout_secs)
        return self.tools

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        elicit = self.floor.value  # the session whose calls run now caused it (app.agents.mcp.floor)
        if elicit is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="Elicitation not supported")
        schema = getattr(params, "requested_schema", None) or {}
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        answer = await elicit(params.message, schema)
        if answer.action in ("accept", "decline", "cancel"):
            return types.ElicitResult(action=answer.action, content=answer.content or None)
        return types.ElicitResult(action="cancel")

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float, progress: Progress | None) -> str:
        session = self.session
        if session is None:
            raise RuntimeError(f"MCP server {self.name!r} is not running")
        callback: Any = progress  # the SDK's ProgressFnT: (progress, total, message)
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout, progress_callback=callback)
        except MCPError as exc:
            code = exc.args[0] if exc.args else None
            if code == types.CONNECTION_CLOSED:
                # The server died (or closed its end): this call fails, the next one starts it again (R-MCP-4).
                self._stop.set()
                self.session = None
                self.error = "the server stopped during a call"
                return f"The MCP server {self.name!r} stopped during this call (it is started again at the next)."
            if code == types.REQUEST_TIMEOUT:
                return f"The MCP tool {tool} did not answer within {timeout:g} s."
            return f"The MCP tool {tool} failed (protocol error {code}): {exc.args[1] if len(exc.args) > 1 else exc}"
        text = render_result(result)
        if result.is_error:
            return f"The MCP tool {tool} failed:\n{text}"
        return text

    async def stop(self) -> None:
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 5.0)
        except (TimeoutError, Exception):
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def render_result(result: Any) -> str:
    """Text content joined, structured content as JSON, other content named (R-MCP-3)."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "content")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            inner = getattr(block, "resource", None)
            text = getattr(inner, "text", None)
            parts.append(text if text is not None else f"[resource: {getattr(inner, 'uri', '')}]")
        else:
            parts.append(f"[{kind} content: {getattr(block, 'mime_type', None) or 'binary'}]")
    if result.structured_content is not None and not parts:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
