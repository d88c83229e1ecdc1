"""`zeroclaw chat`: a terminal chat that streams a turn, shows tool calls, and asks approvals and questions.

Keys (docs/cli.md): Ctrl-C during a turn cancels it (`session/cancel`), a second one leaves; Ctrl-C at a prompt
(`you>`, an approval, a question) leaves at once, cancelling a running turn; Ctrl-D at `you>` leaves. Leaving by
Ctrl-C exits 130 with one line on stderr. The session stays: `zeroclaw chat --session ID` resumes it and shows
the earlier transcript first.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any

import orjson
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from app.cli import terminal
from app.cli.elicit import Question
from app.cli.hints import config_dir_flag, error_line
from app.cli.rpc_command import CLIENT_CAPABILITIES, connect
from app.cli.terminal import Asker, Background, CliError
from rpc.client import Client, RemoteError

__all__ = ["HISTORY_ROWS", "chat"]

console = Console(highlight=False, file=terminal.GuardedStdout())  # type: ignore[arg-type]  # sys.stdout, guarded

HISTORY_ROWS = 50  # transcript rows shown when a session is resumed
_CLIP_LINES = 8  # a tool result in the resumed transcript shows this many lines


def chat(config_dir: str | None, session_id: str | None, agent: str, *, create: bool = False) -> int:
    bg = Background()
    client: Client | None = None
    sid: str | None = None
    lost = threading.Event()

    def on_close() -> None:  # loop thread: the daemon went away; a turn fails by itself, a prompt is interrupted
        lost.set()
        bg.interrupt_reading()

    try:
        client = bg.run(connect(config_dir))
        client.on_close = on_close
        opened = bg.run(_open(client, config_dir, session_id, agent, create=create))
        sid = str(opened["sessionId"])
        state = "resumed" if opened["resumed"] else "new"
        header = f" ({state}, agent {opened['agentAlias']}); Ctrl-C cancels a turn, Ctrl-D leaves"
        console.print(Text(f"session {sid}", style="bold") + Text(header))
        turns = _Chat(bg, client, sid, config_dir, lost)
        # A resumed session may be mid-turn (prompted elsewhere): its updates so far are replayed
        # (R-MULTI-2).
        running = bg.run(turns.attach()) if opened["resumed"] else None
        if opened.get("messageCount"):
            _show_history(bg.run(_history(client, sid)), running_turn=running is not None and running[1])
        if running is not None:
            if not running[1]:
                console.print(Text("(a turn is running; following it from here)", style="yellow"))
            turns.join(running[0])
        while (text := terminal.read_line("you> ")) is not None:
            if text.strip():
                turns.turn(text)
        console.print()
        return 0
    except KeyboardInterrupt:
        terminal.ignore_interrupts()
        console.print()
        if lost.is_set():
            raise CliError(_lost_message(config_dir, sid)) from None
        kept = f" (session {sid} is kept: `zeroclaw chat{config_dir_flag(config_dir)} --session {sid}`)" if sid else ""
        terminal.say(f"zeroclaw: interrupted; left the chat{kept}")
        return terminal.EXIT_INTERRUPTED
    finally:
        terminal.ignore_interrupts()
        if client is not None:
            with contextlib.suppress(Exception):
                bg.run(client.close(), timeout=2)
        bg.close()


async def _open(
    client: Client, config_dir: str | None, session_id: str | None, agent: str, *, create: bool = False
) -> dict[str, Any]:
    params: dict[str, Any] = {"agentAlias": agent}
    if session_id:
        params["sessionId"] = session_id
    try:
        init = {"protocolVersion": 1, "clientInfo": {"name": "zeroclaw-chat"}}
        await client.call("initialize", {**init, "clientCapabilities": CLIENT_CAPABILITIES})
        if session_id and not create and not await _exists(client, session_id):
            flag = config_dir_flag(config_dir)
            raise CliError(
                f"zeroclaw: no session has the id {session_id}; `zeroclaw rpc{flag} session/list` lists yours, "
                f"`zeroclaw chat{flag} --session {session_id} --create` creates one with that id",
                2,
            )
        opened: dict[str, Any] = await client.call("session/new", params)
        return opened
    except RemoteError as exc:
        if _is_unknown_agent(exc.error):
            known = await _known_agents(client)
            listing = f"known agents: {', '.join(known)}" if known else "the agent list is not readable (config:read)"
            raise CliError(
                f"zeroclaw: unknown agent {agent!r}; {listing}. Choose one with --agent NAME, "
                "or add [agents.NAME] to config.toml (docs/agents.md)",
                2,
            ) from None
        raise CliError(error_line(exc.error, config_dir)) from None
    except ConnectionError as exc:
        raise CliError(f"zeroclaw: {exc}; is the daemon still running? (`zeroclaw status`)") from None


def _lost_message(config_dir: str | None, sid: str | None) -> str:
    flag = config_dir_flag(config_dir)
    resume = f" and resume with `zeroclaw chat{flag} --session {sid}`" if sid else ""
    return f"zeroclaw: the daemon closed the connection; start it again (`zeroclaw daemon{flag}`){resume}"


async def _exists(client: Client, session_id: str) -> bool:
    """Whether a session has this id (`session/new` would create one silently): its transcript can be read, or it
    cannot be told (no `sessions:read` grant, another owner's: `session/new` then says what it says)."""
    try:
        await client.call("session/messages", {"sessionId": session_id, "limit": 0})
    except RemoteError as exc:
        return (exc.error.get("data") or {}).get("kind") != "session_not_found"
    return True


def _is_unknown_agent(error: dict[str, Any]) -> bool:
    data = error.get("data") or {}
    return any(isinstance(e, dict) and e.get("type") == "unknown_agent" for e in data.get("errors", []))


async def _known_agents(client: Client) -> list[str]:
    """The configured agent aliases (`config/get agents`), plus `default`, which always exists (R-AGENT-1)."""
    try:
        answer = await client.call("config/get", {"prop": "agents"})
    except RemoteError:
        return []
    value = answer.get("value") if isinstance(answer, dict) else None
    return sorted({"default", *value}) if isinstance(value, dict) else ["default"]


async def _history(client: Client, sid: str) -> dict[str, Any] | None:
    try:
        # `turnEnds`: a cancelled turn has no row of its own to show (a daemon without it ignores the key)
        params = {"sessionId": sid, "limit": HISTORY_ROWS, "turnEnds": True}
        page: dict[str, Any] = await client.call("session/messages", params)
        return page
    except RemoteError:
        return None


def _show_history(page: dict[str, Any] | None, running_turn: bool = False) -> None:
    """The last rows of the transcript; with `running_turn`, up to that turn's prompt, which is shown as typed:
    what the turn has said so far is replayed from its updates (`_Chat.join`)."""
    if page is None:
        console.print("[dim](the earlier transcript is not readable with this principal's grants)[/dim]")
        return
    rows: list[dict[str, Any]] = page.get("messages") or []
    prompt: dict[str, Any] | None = None
    if running_turn:
        users = [i for i, row in enumerate(rows) if row.get("role") == "user"]
        if users:
            rows, prompt = rows[: users[-1]], rows[users[-1]]
    total = int(page.get("total") or len(rows))
    shown = f"the last {len(rows)} of {total} messages" if total > len(rows) else f"{total} messages"
    console.print(Text(f"── earlier in this session ({shown}) ──", style="dim"))
    # A cancelled turn has no marker row (docs/durability.md): `(cancelled)` after its last row,
    # as the live chat shows it. An interrupted one ends with its own marker row.
    cancelled = {end.get("index") for end in page.get("turnEnds") or [] if end.get("stopReason") == "cancelled"}
    for row in rows:
        role, content, name = row.get("role"), str(row.get("content", "")), row.get("name")
        if role == "user":
            console.print(Text("you> ", style="bold") + Text(content))
        elif role == "assistant":
            console.print(Text(content))
        elif role == "thought":
            console.print(Text(f"thinking: {content}", style="dim italic"))
        elif role == "tool_call":
            console.print(Text(f"[tool call: {name}] {content}", style="cyan"))
        elif role == "tool_result":
            lines = content.splitlines()
            clipped = "\n".join(lines[:_CLIP_LINES]) + (" …" if len(lines) > _CLIP_LINES else "")
            console.print(Text(f"[result: {name}] {clipped}", style="dim"))
        elif role == "marker":
            console.print(Text(f"({row.get('marker') or content})", style="yellow"))
        else:
            console.print(Text(f"{role}: {content}"))
        if row.get("index") in cancelled:
            console.print(Text("(cancelled)", style="yellow"))
    console.print(Text("── end of the earlier transcript ──", style="dim"))
    if running_turn:
        console.print(Text("(a turn is running; following it)", style="yellow"))
        if prompt is not None:
            console.print(Text("you> ", style="bold") + Text(str(prompt.get("content", ""))))


class _Chat:
    """One chat's turns. `turn()` runs on the main thread; `_run_turn()` and what it calls run on the loop."""

    def __init__(self, bg: Background, client: Client, sid: str, config_dir: str | None, lost: threading.Event) -> None:
        self.bg = bg
        self.lost = lost
        self.client = client
        self.sid = sid
        self.config_dir = config_dir
        self.view = _View()
        self.inbox: asyncio.Queue[dict[str, Any]] = bg.run(_make_queue())
        client.on_message = self._deliver

    def _deliver(self, message: Any) -> None:
        if isinstance(message, dict):
            self.inbox.put_nowait(message)

    # -- main thread -----------------------------------------------------------------------------------

    def turn(self, text: str) -> None:
        self._serve(self._run_turn(text, asker := Asker()), asker)

    def join(self, replayed: list[dict[str, Any]]) -> None:
        """Show the running turn from its start (`replayed`: its updates so far), then live to its end."""
        self._serve(self._follow_turn(replayed, asker := Asker()), asker)

    def _serve(self, work: Coroutine[Any, Any, dict[str, Any]], asker: Asker) -> None:
        with asker.interrupts():
            future = self.bg.submit(work)
            future.add_done_callback(lambda _f: asker.done())
            self._wait(asker)
        try:
            result = future.result()
        except RemoteError as exc:
            self.view.end()
            console.print(Text(error_line(exc.error, self.config_dir), style="red"))
            return
        except ConnectionError:
            self.view.end()  # the message starts on a line of its own, not after the streamed text
            raise CliError(_lost_message(self.config_dir, self.sid)) from None
        self.view.end()
        if result["stopReason"] != "end_turn":
            console.print(f"[yellow]({result['stopReason']})[/yellow]")

    def _wait(self, asker: Asker) -> None:
        """Serve the turn's questions until it ends. Ctrl-C while it streams cancels it (a second one leaves);
        Ctrl-C at one of its prompts cancels it and leaves."""
        cancelling = False
        at_prompt: terminal.Ask | None = None
        while True:
            try:
                item = asker.items.get()
                if isinstance(item, terminal.Interrupt):
                    if self.lost.is_set():
                        continue  # the connection is gone: the turn fails at once, and says so
                    raise KeyboardInterrupt
                if item is None:
                    return
                at_prompt = item
                answer = terminal.read_line(item.prompt)
                at_prompt = None
                item.answer(answer)
            except KeyboardInterrupt:
                if at_prompt is None and not cancelling:
                    cancelling = True
                    self.bg.submit(self._cancel())
                    console.print("\n[yellow](cancelling the turn; Ctrl-C again leaves the chat)[/yellow]")
                    continue
                # Cancel first, then withdraw the prompt unanswered: a rejection sent first would let the turn go
                # on and end `end_turn` before the cancel arrives.
                with contextlib.suppress(Exception):
                    self.bg.run(self._cancel(), timeout=3)
                if at_prompt is not None:
                    at_prompt.withdraw()
                raise

    # -- loop thread -----------------------------------------------------------------------------------

    async def attach(self) -> tuple[list[dict[str, Any]], bool] | None:
        """Follow the session from now on. None when no turn runs (or the daemon has no `session/attach`); else
        attach again from the running turn's start (`turnStartSeq`, R-MULTI-2: right also after a restart made
        the numbering jump) and give its updates so far, and whether they go back to its start: not when the
        daemon no longer keeps them (`gap`), and the turn is then shown from now on, after the transcript so far."""
        try:
            state = await self.client.call("session/attach", {"sessionId": self.sid})
            if not state.get("running"):
                return None
            start = state.get("turnStartSeq") or 0
            state = await self.client.call("session/attach", {"sessionId": self.sid, "afterSeq": start})
        except RemoteError:
            return None
        by_seq: dict[int, dict[str, Any]] = {}  # live ones of the first attach may come again in the replay
        while not self.inbox.empty():  # replayed before the answer, so all here now
            message = self.inbox.get_nowait()
            update = message.get("params") if message.get("method") == "session/update" else None
            if isinstance(update, dict) and update.get("sessionId") == self.sid and update.get("seq", 0) > start:
                by_seq[update.get("seq", 0)] = update
        replayed = [by_seq[seq] for seq in sorted(by_seq)]
        ends = [i for i, update in enumerate(replayed) if update.get("type") == "turn_complete"]
        if ends:  # it ended meanwhile: what came after its end is the next turn's (shown live)
            return replayed[: ends[0] + 1], not state.get("gap")
        return replayed, not state.get("gap")

    async def _follow_turn(self, replayed: list[dict[str, Any]], asker: Asker) -> dict[str, Any]:
        settled = {u.get("requestId") for u in replayed if u.get("type") == "approval_resolved"}
        for update in replayed:
            if update.get("type") == "approval_request" and update.get("requestId") in settled:
                self.view.block(Text(f"(approval asked for {update.get('toolName')})", style="dim"))
                continue  # answered before this chat joined: nothing to ask
            await self._show({"method": "session/update", "params": update}, asker)
            if update.get("type") == "turn_complete":
                return {"stopReason": update.get("stopReason")}
        while True:
            message = await self.inbox.get()
            await self._show(message, asker)
            update = message.get("params") or {}
            ours = message.get("method") == "session/update" and update.get("sessionId") == self.sid
            if ours and update.get("type") == "turn_complete":
                return {"stopReason": update.get("stopReason")}

    async def _cancel(self) -> None:
        with contextlib.suppress(RemoteError, ConnectionError):
            await self.client.call("session/cancel", {"sessionId": self.sid})

    async def _run_turn(self, text: str, asker: Asker) -> dict[str, Any]:
        while not self.inbox.empty():  # updates that came between turns (another client's) are not this turn's
            self.inbox.get_nowait()
        prompt = asyncio.create_task(self.client.call("session/prompt", {"sessionId": self.sid, "prompt": text}))
        # Leaving mid-turn (Ctrl-C, the daemon gone) must not leave its failure unretrieved (a traceback).
        prompt.add_done_callback(_retrieve)
        getter: asyncio.Task[dict[str, Any]] | None = None
        try:
            while not prompt.done() or not self.inbox.empty():
                getter = asyncio.create_task(self.inbox.get())
                done, _ = await asyncio.wait({getter, prompt}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    await self._show(getter.result(), asker)
                else:
                    getter.cancel()
            result: dict[str, Any] = prompt.result()
            return result
        finally:
            prompt.cancel()  # no-ops once done
            if getter is not None:
                getter.cancel()

    async def _show(self, message: dict[str, Any], asker: Asker) -> None:
        if message.get("method") == "elicitation/create" and "id" in message:
            result = await self._elicit(message.get("params") or {}, asker)
            with contextlib.suppress(ConnectionError, OSError):
                await self.client.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        update = message.get("params") if message.get("method") == "session/update" else None
        if not isinstance(update, dict) or update.get("sessionId") != self.sid:
            return
        kind = update.get("type")
        view = self.view
        if kind == "agent_message_chunk":
            view.text(str(update.get("text", "")))
        elif kind == "agent_thought_chunk":
            view.thought(str(update.get("text", "")))
        elif kind == "tool_call":
            args = orjson.dumps(update.get("rawInput"), option=orjson.OPT_INDENT_2).decode()
            view.block(Panel(Text(args), title=Text(f"tool call: {update.get('name')}"), expand=False))
        elif kind == "tool_result":
            output = Text(str(update.get("rawOutput", "")))
            view.block(Panel(output, title=Text(f"result: {update.get('name')}"), expand=False))
        elif kind == "approval_request":
            view.end()
            await self._approve(update, asker)
        elif kind == "approval_resolved":
            view.block(Text(f"(approval: {update.get('decision')})", style="dim"))
        elif kind == "history_trimmed":
            view.block(Text(f"(older context trimmed: {update.get('droppedMessages')} messages)", style="dim"))
        elif kind == "user_message":  # R-BRANCH-3: a steer (from any client) joined the turn
            view.block(Text(f"(steered: {update.get('text')})", style="dim"))
        elif kind == "turn_complete":
            view.end()

    async def _approve(self, update: dict[str, Any], asker: Asker) -> None:
        args = orjson.dumps(update.get("arguments")).decode()
        prompt = (
            f"allow {update.get('toolName')} {args}? [y]es once / [a]lways (session) / al[w]ays for this agent"
            " / [r]eject for the session / [N]o: "
        )
        # R-GUARD-3: `w` stores a rule for this agent (the exact command or path); `r` rejects the tool for the session.
        choices: dict[str, dict[str, str]] = {
            "y": {"decision": "allow_once"},
            "yes": {"decision": "allow_once"},
            "a": {"decision": "allow_always"},
            "always": {"decision": "allow_always"},
            "w": {"decision": "allow_always", "remember": "agent"},
            "r": {"decision": "reject_always"},
        }
        choices |= {"": {"decision": "reject"}, "n": {"decision": "reject"}, "no": {"decision": "reject"}}
        while True:
            answer = await asker.ask(prompt)
            chosen = {"decision": "reject"} if answer is None else choices.get(answer.strip().lower())
            if chosen is not None:
                break
            console.print("[yellow]answer y, a, w, r or n (Enter = no)[/yellow]")
        with contextlib.suppress(RemoteError, ConnectionError):  # the request may have timed out meanwhile
            answer = await self.client.call(
                "session/approve", {"sessionId": self.sid, "requestId": update.get("requestId"), **chosen}
            )
            if isinstance(answer, dict) and answer.get("acknowledged") is False:  # R-MULTI-3: the first answer won
                console.print("[yellow](already settled: answered in another client, or timed out)[/yellow]")

    async def _elicit(self, params: dict[str, Any], asker: Asker) -> dict[str, Any]:
        self.view.end()
        question = Question.from_params(params)
        console.print(Text(f"(the agent asks; {Question.KEYS})", style="dim"))
        while True:
            result = question.answer(await asker.ask(f"? {question.text()} > "))
            if result is not None:
                return result
            console.print(Text(question.retry_text(), style="yellow"))


async def _make_queue() -> asyncio.Queue[dict[str, Any]]:
    return asyncio.Queue()  # made on the loop thread, where it is used


class _View:
    """Streamed output: thoughts on their own `thinking:` line, the reply text on its own line after them."""

    def __init__(self) -> None:
        self.mode: str | None = None  # "thought" or "text" while a line is open

    def thought(self, text: str) -> None:
        if self.mode != "thought":
            self.end()
            console.print(Text("thinking: ", style="dim"), end="", soft_wrap=True)
            self.mode = "thought"
        console.print(Text(text, style="dim italic"), end="", soft_wrap=True)

    def text(self, text: str) -> None:
        if self.mode != "text":
            self.end()
            self.mode = "text"
        console.print(Text(text), end="", soft_wrap=True)

    def block(self, renderable: Any) -> None:
        self.end()
        console.print(renderable)

    def end(self) -> None:
        if self.mode is not None:
            console.print()
            self.mode = None


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
