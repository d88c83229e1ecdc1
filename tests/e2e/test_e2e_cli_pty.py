"""The interactive `zeroclaw` commands under a real pseudo-terminal (SPEC R-CLI): what a person at a terminal sees.

`os.forkpty()` gives the command a controlling terminal, so `\\x03` written to it is a real Ctrl-C (the terminal
sends SIGINT to the foreground process) and `\\x04` at an empty line is a real Ctrl-D. Every wait reads the output
until the expected text appears, with a timeout of a few seconds; nothing sleeps for correctness.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import termios
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import REPO_ROOT, Daemon, DaemonFactory, RpcFailure, clean_env, zeroclaw_command

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "forkpty"), reason="needs a POSIX pseudo-terminal"),
    pytest.mark.req("R-CLI"),
]

WAIT = 10.0  # seconds for any one expected output (a daemon turn is milliseconds; this bounds a broken run)
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")

CONFIG = """\
[permission_profiles.runner]
grants = { sessions = ["create", "read", "execute"] }

[users.alice]
permission_profiles = ["runner"]
"""


class Terminal:
    """A command on the slave side of a pty; this side reads what it shows and types into it."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        argv, env = list(argv), dict(env)
        pid, fd = os.forkpty()
        if pid == 0:  # the child: only exec (the parent has threads)
            try:
                os.chdir(REPO_ROOT)
                # As a shell starts a foreground command: Ctrl-C and Ctrl-\ do their default, even when this test
                # run was started where they are ignored (a background job, `nohup`), which the command inherits.
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGQUIT, signal.SIG_DFL)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.raw = b""
        self.pos = 0
        self.returncode: int | None = None

    @property
    def output(self) -> str:
        """Everything shown so far, without terminal control sequences or carriage returns."""
        return ANSI_RE.sub("", self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        """Read what is there (waiting up to `timeout`); False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the command exited and the slave side is closed
            data = b""
        self.raw += data
        return bool(data)

    def expect(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """Wait for `pattern` after the previous match; the match."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        open_ = True
        while True:
            m = rx.search(self.output, self.pos)
            if m:
                self.pos = m.end()
                return m
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not open_:
                raise AssertionError(f"{pattern!r} not shown within {timeout} s; the terminal shows:\n{self.output}")
            open_ = self._read(min(remaining, 0.2))

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def frame(self, rid: str, timeout: float = WAIT) -> dict[str, Any]:
        """Wait until the answer with id `rid` is shown whole (a frame is printed over many lines: seeing its id
        line does not mean the rest is there yet); the frame."""
        deadline = time.monotonic() + timeout
        open_ = True
        while True:
            found = next((f for f in json_frames(self.output) if f.get("id") == rid), None)
            if found is not None:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not open_:
                raise AssertionError(f"no whole frame {rid!r} within {timeout} s; the terminal shows:\n{self.output}")
            open_ = self._read(min(remaining, 0.2))

    def line(self, text: str) -> None:
        self.type(text + "\r")  # Enter

    def ctrl_c(self) -> None:
        self.type("\x03")

    def ctrl_d(self) -> None:
        self.type("\x04")

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float = WAIT) -> int:
        """The exit status, reading the output meanwhile (a full pty buffer would block the command)."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout} s; the terminal shows:\n{self.output}")
            self._read(0.05)
        while self._read(0.05) and select.select([self.fd], [], [], 0)[0]:
            pass
        assert self.returncode is not None
        return self.returncode

    def close(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    try:
        yield opened
    finally:
        for t in opened:
            t.close()


@pytest.fixture(scope="module")
def pty_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


def term_env(home_env: Mapping[str, str]) -> dict[str, str]:
    # TERM=dumb: what the person reads must be set apart by text, not only by colour or style.
    return {**home_env, "TERM": "dumb", "COLUMNS": "200", "LINES": "50"}


def zeroclaw(terminals: list[Terminal], d: Daemon, *args: str) -> Terminal:
    t = Terminal([*zeroclaw_command(), *args, "--config-dir", str(d.config_dir)], term_env(d.env))
    terminals.append(t)
    return t


def left_cleanly(t: Terminal, code: int, message: str) -> None:
    assert t.wait() == code, t.output
    assert "Traceback" not in t.output and "KeyboardInterrupt" not in t.output, t.output
    assert message in t.output, t.output


def json_frames(text: str) -> list[dict[str, Any]]:
    """The JSON objects the interactive rpc client printed (pretty-printed, one after another)."""
    decoder = json.JSONDecoder()
    frames, i = [], 0
    while (start := text.find("{", i)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        frames.append(obj)
        i = end
    return frames


def tool_results(text: str) -> list[str]:
    return [
        f["params"]["rawOutput"]
        for f in json_frames(text)
        if f.get("method") == "session/update" and f["params"].get("type") == "tool_result"
    ]


# -- zeroclaw rpc (interactive) ----------------------------------------------------------------------------------


def test_rpc_interactive_initializes_first(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect(r"connected to zeroclaw \S+ \(pid \d+\) as owner")
    t.line("status")
    frame = t.frame("cli-1")
    assert frame["result"]["pid"] == pty_daemon.pid, frame  # not -32010: the client initialized first
    t.ctrl_c()  # (a Ctrl-D typed while the client is not yet back in readline would be lost: no visible prompt)
    assert t.wait() == 130


def test_rpc_interactive_asks_the_person_when_the_daemon_asks(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect("Ctrl-D to quit")
    t.line('session/new {"sessionId": "rpc-ask"}')
    t.expect(r'"resumed"')

    def prompt(text: str) -> None:
        t.line(json.dumps({"jsonrpc": "2.0", "method": "session/prompt", "id": text,
                           "params": {"sessionId": "rpc-ask", "prompt": text}}))  # fmt: skip

    prompt("/ask What is your name?")
    t.expect(r"\? What is your name\?  \[answer on the next line")
    t.line("Ada Lovelace")
    t.expect(r'"content": "Answer: «Ada Lovelace»"')

    prompt("/ask Anything to add?")
    t.expect(r"\? Anything to add\?")
    t.line("")  # an empty line declines
    t.expect(r'"content": "Answer: «The user declined to answer.»"')

    prompt("/poll Pick a colour | red | blue")
    t.expect(r"\? Pick a colour \[red / blue\]")
    t.line("green")
    t.expect(r"not one of the options; choose one of: red / blue")  # asked again, nothing sent yet
    t.line("blue")
    t.expect(r'"content": "Choice: «blue»"')
    assert tool_results(t.output) == [
        "Ada Lovelace",
        "The user declined to answer.",
        "blue",
    ]
    t.ctrl_c()
    assert t.wait() == 130


def test_rpc_interactive_typed_initialize_reauthenticates(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    async def token() -> str:
        async with await pty_daemon.client() as owner:
            return str((await owner.call("pairing/create", {"user": "alice"}))["token"])

    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect("as owner")
    t.line(f'initialize {{"authToken": "{asyncio.run(token())}"}}')
    initialized = t.frame("cli-1")
    t.line("status")  # alice has no system:read
    refused = t.frame("cli-2")  # regression: the id line was read before the rest of the frame had arrived
    assert initialized["result"]["principal"]["id"] == "user:alice", initialized
    assert refused["error"]["code"] == -32012, refused
    t.ctrl_c()
    assert t.wait() == 130, t.output


def test_rpc_interactive_at_a_terminal_shows_a_banner_and_a_prompt(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    """issue 29 §4.8 (it looked stuck): at a terminal the client says how to type a call and how to leave, and
    prompts; what arrives at the prompt is printed above it, and the prompt comes back with what was typed."""
    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect(r"connected to zeroclaw \S+ \(pid \d+\) as owner\ntype a call as `METHOD \{params\}`")
    t.expect("Ctrl-D to quit")
    t.expect("rpc> ")
    t.line('session/new {"sessionId": "rpc-prompt"}')
    t.frame("cli-1")
    t.expect(r"\}\nrpc> $")  # the prompt again, below the answer
    t.line('session/prompt {"sessionId": "rpc-prompt", "prompt": "/sleep 1"}')
    t.type("stat")  # typed, not entered, while the turn streams
    t.frame("cli-2")
    t.expect(r"\}\nrpc> stat$")  # the turn's answer came at the prompt: prompt and typed text drawn again
    t.type("\x15")  # Ctrl-U: the line is empty again
    t.ctrl_d()  # the prompt is visible, so this Ctrl-D is not lost
    assert t.wait() == 0, t.output


def settle(t: Terminal, quiet: float = 0.3) -> None:
    """Wait until nothing more arrives for `quiet` seconds: the answer is shown and the client is back in
    `input()`, so what is typed next goes to readline, not into the middle of a redraw."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        before = len(t.raw)
        t._read(quiet)
        if len(t.raw) == before:
            return
    raise AssertionError(f"the output did not settle; the terminal shows:\n{t.output}")


@pytest.mark.req("R-DISC-1")
def test_rpc_interactive_tab_completes_the_daemons_method_names(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    """The names come from the daemon's `rpc.discover`: a unique start completes whole, a shared one to the
    longest common start (`session/list` and `session/list-acp`), and only the first word of a line."""
    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect("rpc> ")
    t.type("rpc.disc\t")
    t.expect(r"rpc\.discover ?$")  # (readline draws the space it appends with the next key)
    t.line(" {}")
    assert t.frame("cli-1")["result"]["openrpc"] == "1.3.2"
    settle(t)  # the prompt is back below the answer: typing now does not race its redraw
    t.type("session/lis\t")
    t.expect(r"session/lis\a?t$")  # a bell (more than one name starts so), then the common start
    t.type("-\t")
    t.expect(r"-acp ?$")
    t.line(" {}")
    assert "sessions" in t.frame("cli-2")["result"]
    settle(t)
    t.type('status {"x": "sta\t')  # not the first word: a Tab there completes nothing
    t.expect(r'status \{"x": "sta\a?$')
    t.type("\x15")
    t.ctrl_d()
    assert t.wait() == 0, t.output


def test_rpc_interactive_ctrl_c_leaves_cleanly(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "rpc")
    t.expect("Ctrl-D to quit")
    t.type("stat")  # half a line typed (and read: readline echoes it), then Ctrl-C
    t.expect("stat")
    t.ctrl_c()
    left_cleanly(t, 130, "zeroclaw: interrupted; left the interactive client")


# -- zeroclaw chat -----------------------------------------------------------------------------------------------


def test_chat_ctrl_c_at_the_idle_prompt_leaves_at_once(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-idle", "--create")
    t.expect(r"session chat-idle \(new")
    t.expect("you> ")
    t.ctrl_c()  # no Enter follows
    left_cleanly(t, 130, "zeroclaw: interrupted; left the chat (session chat-idle is kept")


@pytest.mark.req("R-GUARD-3")
def test_chat_always_for_this_agent_stores_a_rule(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    """`w` at the approval prompt stores an allow rule for the exact command (permissions/list shows it)."""
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-remember", "--create")
    t.expect("you> ")
    t.line("/bash echo remembered-by-chat")
    t.expect(r"al\[w\]ays for this agent .*\[N\]o: ")
    t.line("w")
    t.expect("remembered-by-chat")
    t.expect("you> ")
    t.ctrl_c()

    async def rules() -> list[str]:
        async with await pty_daemon.client() as owner:
            return [r["pattern"] for r in (await owner.call("permissions/list", {}))["rules"]]

    assert "bash(echo remembered-by-chat)" in asyncio.run(rules())


def test_chat_ctrl_c_at_the_approval_prompt_leaves_and_cancels_the_turn(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    """docs/cli.md's keys; issue 29 §4.4: the turn is cancelled, not rejected first (and then carried on)."""
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-approve", "--create")
    t.expect("you> ")
    t.line("/bash touch approval-marker")
    t.expect(r"allow bash .*\[N\]o: ")
    t.ctrl_c()
    left_cleanly(t, 130, "zeroclaw: interrupted; left the chat")
    assert not (pty_daemon.data_dir / "workspaces" / "default" / "approval-marker").exists()

    async def transcript() -> list[tuple[str, str]]:
        async with await pty_daemon.client() as owner:
            page = await owner.call("session/messages", {"sessionId": "chat-approve"})
            return [(row["role"], row["content"]) for row in page["messages"]]

    # issue 29 §4.4: cancelled, not rejected: a rejection sent first let the turn go on and end `end_turn`
    rows = asyncio.run(transcript())
    assert rows[:2] == [("user", "/bash touch approval-marker"), ("tool_call", '{"command":"touch approval-marker"}')]
    assert not any(role in ("tool_result", "assistant") for role, _ in rows), rows

    async def prompt_again() -> dict[str, Any]:
        # the turn was cancelled, not left waiting for an answer: the session takes a new prompt
        async with await pty_daemon.client() as owner:
            await owner.call("session/new", {"sessionId": "chat-approve"})
            deadline = time.monotonic() + WAIT
            while True:
                try:
                    return await owner.call("session/prompt", {"sessionId": "chat-approve", "prompt": "hi"})  # type: ignore[no-any-return]
                except RpcFailure as exc:  # the cancelled turn may take a moment to wind down
                    if exc.code != -32002 or time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.05)

    assert asyncio.run(prompt_again())["stopReason"] == "end_turn"


def test_chat_ctrl_c_during_a_turn_cancels_it(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-cancel", "--create")
    t.expect("you> ")
    t.line("/sleep 30")
    t.expect("Sleeping for 30")
    t.ctrl_c()
    t.expect(r"\(cancelled\)")
    t.expect("you> ")  # back at the prompt: the chat goes on
    t.ctrl_d()
    assert t.wait() == 0
    assert "Traceback" not in t.output


@pytest.mark.req("R-ACP-5")
def test_chat_resumed_session_shows_a_cancelled_turn_as_cancelled(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    """issue 29 §4.9: the interrupted turn had its marker when resumed, the cancelled one had none. A cancelled turn
    adds no row (the transcript is the contract's, R-ACP-4): the chat asks `session/messages` for `turnEnds` and
    shows `(cancelled)` after the turn's last row, and nothing after a turn that ended as usual."""
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-cancel-resume", "--create")
    t.expect("you> ")
    t.line("hello")
    t.expect("You said: «hello»")
    t.expect("you> ")
    t.line("/sleep 30")
    t.expect("Sleeping for 30")
    t.ctrl_c()
    t.expect(r"\(cancelled\)")
    t.expect("you> ")
    t.ctrl_d()
    assert t.wait() == 0
    again = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-cancel-resume")
    again.expect(
        r"earlier in this session \(4 messages\) ──\nyou> hello\nYou said: «hello»\n"
        r"you> /sleep 30\nSleeping for 30 s[^\n]*\n\(cancelled\)\n── end of the earlier transcript"
    )
    again.expect("you> ")
    again.ctrl_d()
    assert again.wait() == 0


def test_chat_asks_the_agents_questions_and_asks_again_for_a_non_option(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-poll", "--create")
    t.expect("you> ")
    t.line("/poll Pick a colour | red | blue")
    t.expect(r"\? Pick a colour \[red / blue\] > ")
    t.line("green")
    t.expect("not one of the options; choose one of: red / blue")
    t.expect(r"\? Pick a colour \[red / blue\] > ")
    t.line("blue")
    t.expect("Choice: «blue»")
    t.expect("you> ")
    t.line("/ask Your name?")
    t.expect(r"\? Your name\? > ")
    t.line("Ada")
    t.expect("Answer: «Ada»")
    t.expect("you> ")
    t.line("/ask Anything to add?")
    t.expect(r"\? Anything to add\? > ")
    t.line("")  # an empty line declines
    t.expect("Answer: «The user declined to answer.»")
    t.expect("you> ")
    t.line("/ask Last question?")
    t.expect(r"\? Last question\? > ")
    t.ctrl_d()  # Ctrl-D at a question cancels it; the chat goes on
    t.expect("Answer: «The user cancelled the question.»")
    t.expect("you> ")
    t.ctrl_d()
    assert t.wait() == 0


def test_chat_thought_is_set_apart_from_the_reply(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-think", "--create")
    t.expect("you> ")
    t.line("/think this through")
    t.expect(r"\nthinking: this through\nI have thought it over\.\n")
    t.ctrl_d()
    assert t.wait() == 0


def test_chat_resumed_session_shows_the_earlier_transcript(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    async def earlier() -> None:
        async with await pty_daemon.client() as owner:
            await owner.call("session/new", {"sessionId": "chat-resume"})
            for text in ("first words", "second words"):
                await owner.call("session/prompt", {"sessionId": "chat-resume", "prompt": text})

    asyncio.run(earlier())
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-resume")
    t.expect(r"session chat-resume \(resumed")
    t.expect(r"earlier in this session \(4 messages\)")
    t.expect(r"you> first words\nYou said: «first words»\nyou> second words\nYou said: «second words»\n")
    t.expect("end of the earlier transcript")
    t.expect("you> ")
    t.ctrl_d()
    assert t.wait() == 0


# -- zeroclaw upload --------------------------------------------------------------------------------------------


class StalledEndpoint(threading.Thread):
    """A stand-in daemon that starts an upload and then never answers a chunk: the upload is under way."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(1)
        self.server.settimeout(WAIT)
        self.chunk_seen = threading.Event()
        self.closed = threading.Event()

    def run(self) -> None:
        conn, _ = self.server.accept()
        with conn, conn.makefile("rwb") as stream:
            for line in stream:
                frame = json.loads(line)
                answer: Any = None
                if frame["method"] == "initialize":
                    answer = {"protocolVersion": 1, "serverVersion": "0", "serverPid": 1, "principal": {"id": "owner"}}
                elif frame["method"] == "file/upload/begin":
                    answer = {"upload_id": "u1", "chunk_bytes": 1024}
                else:
                    self.chunk_seen.set()
                    continue
                stream.write(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": answer}).encode() + b"\n")
                stream.flush()
        self.closed.set()


def test_upload_ctrl_c_mid_upload_ends_cleanly(
    daemon_factory: DaemonFactory, terminals: list[Terminal], tmp_path: Path
) -> None:
    root = daemon_factory.tmpdir()
    (root / "cfg" / "data").mkdir(parents=True)
    endpoint = StalledEndpoint(root / "cfg" / "data" / "daemon.sock")
    endpoint.start()
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(64 * 1024))
    t = Terminal(
        [*zeroclaw_command(), "upload", "--config-dir", str(root / "cfg"), "s1", str(source)],
        term_env(clean_env(root)),
    )
    terminals.append(t)
    assert endpoint.chunk_seen.wait(WAIT), t.output
    t.ctrl_c()
    left_cleanly(t, 130, "zeroclaw: upload interrupted; nothing was attached")
    assert endpoint.closed.wait(WAIT)  # the connection was closed, not left hanging


# -- the daemon goes away -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["rpc", "chat"])
def test_daemon_going_away_is_reported_with_what_to_do(
    daemon_factory: DaemonFactory, terminals: list[Terminal], command: str
) -> None:
    d = daemon_factory.start()
    t = zeroclaw(terminals, d, command)
    t.expect("Ctrl-D")  # the greeting of either command
    d.stop()
    left_cleanly(
        t,
        1,
        f"zeroclaw: the daemon closed the connection; start it again (`zeroclaw daemon --config-dir {d.config_dir}`)",
    )


def test_chat_daemon_lost_mid_stream_is_reported_on_a_line_of_its_own(
    daemon_factory: DaemonFactory, terminals: list[Terminal]
) -> None:
    """issue 29 §4.9: the message no longer runs on after the streamed text."""
    d = daemon_factory.start()
    t = zeroclaw(terminals, d, "chat", "--session", "chat-lost", "--create")
    t.expect("you> ")
    t.line("/sleep 30")
    t.expect("Sleeping for 30 s")
    d.send_signal(signal.SIGKILL)  # gone mid-stream: the turn fails, no answer comes
    left_cleanly(t, 1, "zeroclaw: the daemon closed the connection")
    assert re.search(r"Sleeping for 30 s[^\n]*\nzeroclaw: the daemon closed the connection", t.output), t.output


@pytest.mark.req("R-MULTI-2")
@pytest.mark.req("R-MULTI-3")
def test_chat_session_joins_a_turn_running_elsewhere_and_shows_it_from_its_start(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    """`zeroclaw chat --session ID` on a session another client is prompting: the turn is shown from its first
    update (replayed), then live to its end, and an approval it asks is answered here."""

    async def prompt_elsewhere() -> tuple[Any, asyncio.Task[Any]]:
        owner = await pty_daemon.client()
        await owner.call("session/new", {"sessionId": "chat-join"})
        await owner.send(
            {"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
             "params": {"sessionId": "chat-join", "prompt": "/bash echo joined-$((6 * 7))"}}
        )  # fmt: skip
        return owner, asyncio.create_task(owner.recv_response(timeout=WAIT))

    async def scenario() -> str:
        owner, answer = await prompt_elsewhere()
        await asyncio.sleep(0.5)  # the turn is waiting for its approval
        t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-join")
        await asyncio.to_thread(t.expect, r"session chat-join \(resumed")
        await asyncio.to_thread(t.expect, r"a turn is running; following it")
        await asyncio.to_thread(t.expect, r"you> /bash echo joined")
        await asyncio.to_thread(t.expect, r"tool call: bash")  # replayed: it came before this chat started
        await asyncio.to_thread(t.expect, r"allow bash .*\[N\]o: ")
        t.line("y")
        await asyncio.to_thread(t.expect, r"joined-42")
        await asyncio.to_thread(t.expect, "you> ")
        t.ctrl_d()
        assert await asyncio.to_thread(t.wait) == 0, t.output
        response = await answer
        await owner.close()
        return str(response["result"]["content"])

    assert "joined-42" in asyncio.run(scenario())


@pytest.mark.req("R-BRANCH-3")
def test_chat_shows_a_steer_another_client_sent_into_its_turn(pty_daemon: Daemon, terminals: list[Terminal]) -> None:
    """While the chat's turn waits for its approval, another client steers it: the chat shows the steer, and the
    turn's next step answers it (the scripted provider's `/context` ends with the steer)."""
    t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-steered", "--create")
    t.expect("you> ")
    t.line("/bash echo steered-chat")
    t.expect(r"allow bash .*\[N\]o: ")

    async def steer() -> dict[str, Any]:
        other = await pty_daemon.client()
        try:
            frame = {"sessionId": "chat-steered", "prompt": "/context"}
            await other.send({"jsonrpc": "2.0", "id": 1, "method": "session/steer", "params": frame})
            t.line("y")  # the steer was sent first: it waits for the turn's next step, after this approval
            response = await other.recv_response(timeout=WAIT)
        finally:
            await other.close()
        return dict(response["result"])

    assert asyncio.run(steer()) == {"accepted": True, "index": 3}
    t.expect(r"\(steered: /context\)")
    t.expect(r"user: /context")
    t.expect("you> ")
    t.ctrl_d()
    assert t.wait() == 0, t.output


@pytest.mark.req("R-MULTI-2")
def test_chat_session_joins_a_running_turn_from_its_start_after_a_crash_renumbered_the_session(
    daemon_factory: DaemonFactory, terminals: list[Terminal]
) -> None:
    """issue 38 §5.4: after a SIGKILL the session's numbering jumps on restart, so a replay from 0 is a gap; the
    chat replays from the attach result's `turnStartSeq` and shows the turn from its start, not "from here"."""
    first = daemon_factory.start(CONFIG)

    async def before_the_crash() -> None:
        owner = await first.client()
        await owner.call("session/new", {"sessionId": "chat-renumbered"})
        await owner.call("session/prompt", {"sessionId": "chat-renumbered", "prompt": "before the crash"})
        await owner.close()

    asyncio.run(before_the_crash())
    first.send_signal(signal.SIGKILL)
    first.wait_exit()
    second = daemon_factory.start(config_dir=first.config_dir, root=first.root)

    async def scenario() -> None:
        owner = await second.client()
        await owner.call("session/new", {"sessionId": "chat-renumbered"})
        await owner.send(
            {"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
             "params": {"sessionId": "chat-renumbered", "prompt": "/sleep 2"}}
        )  # fmt: skip
        while (await owner.recv(timeout=WAIT)).get("params", {}).get("type") != "agent_message_chunk":
            pass  # the turn has said something: a join must replay it
        t = zeroclaw(terminals, second, "chat", "--session", "chat-renumbered")
        await asyncio.to_thread(t.expect, r"a turn is running; following it\)")  # not "following it from here"
        await asyncio.to_thread(t.expect, r"you> /sleep 2")
        await asyncio.to_thread(t.expect, r"Sleeping for 2 s")  # replayed: it came before this chat started
        await asyncio.to_thread(t.expect, "you> ")
        t.ctrl_d()
        assert await asyncio.to_thread(t.wait) == 0, t.output
        assert "from here" not in t.output, t.output
        await owner.close()

    asyncio.run(scenario())


@pytest.mark.req("R-MULTI-3")
def test_chat_answering_an_approval_another_client_answered_first_is_told_so(
    pty_daemon: Daemon, terminals: list[Terminal]
) -> None:
    async def scenario() -> None:
        owner = await pty_daemon.client()
        await owner.call("session/new", {"sessionId": "chat-late"})
        await owner.send(
            {"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
             "params": {"sessionId": "chat-late", "prompt": "/bash echo late-$((6 * 7))"}}
        )  # fmt: skip
        request = await owner.recv(timeout=WAIT)
        while request.get("params", {}).get("type") != "approval_request":
            request = await owner.recv(timeout=WAIT)
        t = zeroclaw(terminals, pty_daemon, "chat", "--session", "chat-late")
        await asyncio.to_thread(t.expect, r"allow bash .*\[N\]o: ")  # the chat asks it too
        approve = {"sessionId": "chat-late", "requestId": request["params"]["requestId"], "decision": "allow_once"}
        await owner.send({"jsonrpc": "2.0", "id": 100, "method": "session/approve", "params": approve})
        while (answer := await owner.recv(timeout=WAIT)).get("id") != 100:
            pass
        assert answer["result"]["acknowledged"] is True
        t.line("n")  # too late: the other client's answer won
        await asyncio.to_thread(t.expect, r"already settled")
        await asyncio.to_thread(t.expect, r"late-42")  # allowed, as the first answer said
        await asyncio.to_thread(t.expect, "you> ")
        t.ctrl_d()
        assert await asyncio.to_thread(t.wait) == 0, t.output
        await owner.close()

    asyncio.run(scenario())
