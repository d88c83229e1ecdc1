"""`zeroclaw chat`: a terminal chat that streams a turn, shows tool calls, and asks approvals and questions.

Ctrl-C during a turn cancels it (`session/cancel`); Ctrl-C or Ctrl-D at the prompt leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any

import orjson
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from app.cli.rpc_command import connect
from rpc.client import Client, RemoteError

__all__ = ["chat"]

console = Console(highlight=False)


async def _ask(prompt: str) -> str | None:
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, input, prompt)
    except (EOFError, KeyboardInterrupt):
        return None


async def chat(config_dir: str | None, session_id: str | None, agent: str) -> int:
    client = await connect(config_dir)
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    client.on_message = lambda message: inbox.put_nowait(message) if isinstance(message, dict) else None
    try:
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}})
        params: dict[str, Any] = {"agentAlias": agent}
        if session_id:
            params["sessionId"] = session_id
        opened = await client.call("session/new", params)
    except RemoteError as exc:
        console.print(f"[red]{exc.error.get('message')}[/red]")
        await client.close()
        return 1
    sid = opened["sessionId"]
    state = "resumed" if opened["resumed"] else "new"
    console.print(f"[bold]session {sid}[/bold] ({state}, agent {opened['agentAlias']}); Ctrl-C cancels a turn")
    try:
        while (text := await _ask("you> ")) is not None:
            if text.strip():
                await _turn(client, inbox, sid, text)
        return 0
    finally:
        await client.close()


async def _turn(client: Client, inbox: asyncio.Queue[dict[str, Any]], sid: str, text: str) -> None:
    loop = asyncio.get_running_loop()
    prompt = loop.create_task(client.call("session/prompt", {"sessionId": sid, "prompt": text}))

    cancels: set[asyncio.Task[Any]] = set()

    def cancel() -> None:
        task = loop.create_task(client.call("session/cancel", {"sessionId": sid}))
        cancels.add(task)
        task.add_done_callback(cancels.discard)

    with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows' loop
        loop.add_signal_handler(signal.SIGINT, cancel)
    try:
        while not prompt.done() or not inbox.empty():
            getter = loop.create_task(inbox.get())
            done, _ = await asyncio.wait({getter, prompt}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                await _show(client, sid, getter.result())
            else:
                getter.cancel()
        try:
            result = prompt.result()
        except RemoteError as exc:
            console.print(f"\n[red]{exc.error.get('message')}[/red]")
            return
        if result["stopReason"] != "end_turn":
            console.print(f"[yellow]({result['stopReason']})[/yellow]")
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)


async def _show(client: Client, sid: str, message: dict[str, Any]) -> None:
    if message.get("method") == "elicitation/create" and "id" in message:
        await client.send({"jsonrpc": "2.0", "id": message["id"], "result": await _elicit(message["params"])})
        return
    update = message.get("params") if message.get("method") == "session/update" else None
    if not isinstance(update, dict) or update.get("sessionId") != sid:
        return
    kind = update.get("type")
    if kind == "agent_message_chunk":
        console.print(update["text"], end="", markup=False)
    elif kind == "agent_thought_chunk":
        console.print(Text(update["text"], style="dim italic"), end="")
    elif kind == "tool_call":
        args = orjson.dumps(update.get("rawInput"), option=orjson.OPT_INDENT_2).decode()
        console.print(Panel(Text(args), title=Text(f"tool call: {update['name']}"), expand=False))
    elif kind == "tool_result":
        output = Text(str(update.get("rawOutput", "")))
        console.print(Panel(output, title=Text(f"result: {update['name']}"), expand=False))
    elif kind == "approval_request":
        await _approve(client, sid, update)
    elif kind == "history_trimmed":
        console.print(f"[dim](older context trimmed: {update['droppedMessages']} messages)[/dim]")
    elif kind == "turn_complete":
        console.print()


async def _approve(client: Client, sid: str, update: dict[str, Any]) -> None:
    args = orjson.dumps(update.get("arguments")).decode()
    answer = await _ask(f"allow {update['toolName']} {args}? [y]es once / [a]lways / [N]o: ")
    decision = {"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always"}.get(
        (answer or "").strip().lower(), "reject"
    )
    with contextlib.suppress(RemoteError):  # the request may have timed out meanwhile
        await client.call("session/approve", {"sessionId": sid, "requestId": update["requestId"], "decision": decision})


async def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = params.get("requestedSchema") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    field, spec = next(iter(properties.items()), ("answer", dict[str, Any]()))
    options = spec.get("enum")
    hint = f" ({' / '.join(map(str, options))})" if options else ""
    answer = await _ask(f"{params.get('message', '?')}{hint} > ")
    if answer is None:
        return {"action": "cancel"}
    if not answer.strip():
        return {"action": "decline"}
    if options and answer.strip() not in options:
        print("not one of the options; declining", file=sys.stderr)
        return {"action": "decline"}
    return {"action": "accept", "content": {field: answer.strip()}}
