"""`zeroclaw rpc` and `zeroclaw status`: one call with JSON out, an interactive line client, or `--list`."""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from app.cli import terminal
from app.cli.elicit import Question
from app.cli.hints import config_dir_flag, error_line, no_daemon
from app.cli.method_list import MethodCompleter, discover
from app.cli.terminal import CliError
from app.paths import resolve
from rpc.client import Client, RemoteError

__all__ = ["CLIENT_CAPABILITIES", "connect", "interactive", "list_methods", "one_shot", "with_client"]

CANCEL: dict[str, Any] = {"action": "cancel"}

# The interactive commands answer `elicitation/create` by asking the person (R-BIDI-5).
CLIENT_CAPABILITIES: dict[str, Any] = {"elicitation": {}}


PROMPT = "rpc> "
BANNER = (
    "type a call as `METHOD {params}` (e.g. `session/list {}`) or a JSON-RPC frame; answers and notifications "
    "print as they arrive; Ctrl-D to quit"
)


def _print_json(value: Any) -> None:
    terminal.write_out(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


async def connect(config_dir: str | None) -> Client:
    endpoint = resolve(config_dir).endpoint
    try:
        return await Client.connect(endpoint)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise CliError(no_daemon(config_dir, endpoint, exc.strerror or str(exc))) from None
    except PermissionError:
        raise CliError(
            f"zeroclaw: permission denied on {endpoint}: the daemon runs as another user; run as that user, "
            "or start your own with `zeroclaw daemon --config-dir DIR`"
        ) from None
    except OSError as exc:
        raise CliError(f"zeroclaw: cannot connect to {endpoint}: {exc.strerror or exc}") from None


async def one_shot(config_dir: str | None, method: str, params_json: str | None) -> int:
    try:
        params = orjson.loads(params_json) if params_json else None
    except orjson.JSONDecodeError:
        from app.cli.method_hints import local_methods, params_example

        example = params_example(method, local_methods())  # from the method's own params
        print(f"zeroclaw: PARAMS must be JSON, e.g. zeroclaw rpc {method} '{example}'", file=sys.stderr)
        return 2

    async def call(client: Client) -> int:
        await client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "zeroclaw-cli"}})
        try:
            _print_json(await client.call(method, params))
        except RemoteError as exc:
            if exc.error.get("code") != -32601:
                raise
            _print_json({"error": exc.error})  # as `with_client` does, with the name meant in the line
            terminal.say(error_line(exc.error, config_dir, meant=await _meant(client, method)))
            return 1
        return 0

    return await with_client(config_dir, call, error_json=True)


async def list_methods(config_dir: str | None) -> int:
    """`zeroclaw rpc --list`: one line per method, its name then its summary; `(local only)` where the gateway
    refuses it."""

    async def show(client: Client) -> int:
        _print_methods(await discover(client))
        return 0

    return await with_client(config_dir, show)


def _print_methods(methods: list[dict[str, Any]]) -> None:
    width = max(len(method["name"]) for method in methods)
    for method in methods:
        where = " (local only)" if method.get("x-local-only") else ""
        terminal.write_out(f"{method['name']:<{width}}  {method.get('summary', '')}{where}\n")


async def with_client(
    config_dir: str | None, work: Callable[[Client], Awaitable[int]], *, error_json: bool = False
) -> int:
    """Connect, run `work` (its exit status), and close; an error answer or a lost daemon is one line on stderr
    and status 1 (`error_json`: the error object is printed too, so stdout stays machine-readable)."""
    client = await connect(config_dir)
    try:
        return await work(client)
    except RemoteError as exc:
        if error_json:
            _print_json({"error": exc.error})
        terminal.say(error_line(exc.error, config_dir))
        return 1
    except ConnectionError as exc:
        print(f"zeroclaw: {exc}; is the daemon still running?", file=sys.stderr)
        return 1
    finally:
        await client.close()


async def _meant(client: Client, method: str) -> str | None:
    """The method the daemon serves whose name is closest to `method` (a typo), from its `rpc.discover`."""
    from app.cli.method_hints import did_you_mean

    try:
        document = await client.call("rpc.discover")
        return did_you_mean(method, [m["name"] for m in document["methods"]])
    except (RemoteError, ConnectionError, KeyError, TypeError):
        return None


def _hashable(value: Any) -> bool:
    """A request id this client can wait for (JSON-RPC ids are strings or numbers)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _history_file(config_dir: str | None) -> Path:
    return resolve(config_dir).config_dir / "rpc_history"


class _Interactive:
    """Lines typed go out as frames; everything received is printed; the daemon's questions are asked here.

    The main thread reads lines. A question (`elicitation/create`) arrives on the loop thread, is printed and
    queued; the next line typed answers the oldest open question instead of going out as a frame. At the end of
    the input the client waits for the answers to the requests it sent (`printf 'status\n' | zeroclaw rpc`
    prints the answer), cancelling questions nobody is left to answer.
    """

    def __init__(self, config_dir: str | None) -> None:
        self.config_dir = config_dir
        # At a terminal: a banner and a prompt. Piped input gets neither, so the output is only the frames.
        self.at_terminal = sys.stdin.isatty()
        self.prompt_on_stdout = self.at_terminal and sys.stdout.isatty()
        self.stdout_closed = False
        self.bg = terminal.Background()
        self.questions: collections.deque[tuple[Any, Question]] = collections.deque()
        self.lock = threading.Lock()
        self.lost = False
        self.next_id = 1
        self.client: Client | None = None
        self.outstanding: set[Any] = set()  # ids of the requests sent from typed lines, until answered
        self.settled = threading.Event()
        self.ending = False
        self.served: list[dict[str, Any]] | None = None  # the daemon's methods (`rpc.discover`), once asked

    # -- loop thread ------------------------------------------------------------------------------

    def on_message(self, message: Any) -> None:
        if self.stdout_closed:
            return
        try:
            self.show(orjson.dumps(message, option=orjson.OPT_INDENT_2).decode())
        except terminal.StdoutClosed:
            self.stdout_closed = True
            self.settled.set()
            self.bg.interrupt_reading()
            return
        for answer in message if isinstance(message, list) else [message]:
            if isinstance(answer, dict) and "method" not in answer and _hashable(answer.get("id")):
                with self.lock:
                    self.outstanding.discard(answer.get("id"))
                    if not self.outstanding:
                        self.settled.set()
        if isinstance(message, dict) and message.get("method") == "elicitation/create" and "id" in message:
            if self.ending:  # the input has ended: nobody is left to answer
                assert self.client is not None
                self.bg.loop.create_task(self.client.send({"jsonrpc": "2.0", "id": message["id"], "result": CANCEL}))
                return
            question = Question.from_params(message.get("params") or {})
            with self.lock:
                self.questions.append((message["id"], question))
            with contextlib.suppress(terminal.StdoutClosed):  # noticed by the next frame, or at the end
                self.show(f"? {question.text()}  [answer on the next line; {Question.KEYS}]")

    def show(self, text: str) -> None:
        """Print a line block that arrived (loop thread). At the prompt it replaces the prompt's line, and the
        prompt with what was typed so far is drawn again below it."""
        if not self.prompt_on_stdout:
            terminal.write_out(text + "\n")
            return
        self.bg.print_above_prompt(text, PROMPT)

    def lost_message(self) -> str:
        flag = config_dir_flag(self.config_dir)
        return f"zeroclaw: the daemon closed the connection; start it again (`zeroclaw daemon{flag}`)"

    def on_close(self) -> None:
        self.lost = True
        self.bg.interrupt_reading()

    # -- main thread ------------------------------------------------------------------------------

    def start(self) -> None:
        self.client = client = self.bg.run(connect(self.config_dir))
        client.on_message = self.on_message
        client.on_close = self.on_close
        try:
            init = self.bg.run(client.call("initialize", self.init_params({})))
        except ConnectionError:
            raise CliError(self.lost_message()) from None
        except RemoteError as exc:
            _print_json({"error": exc.error})
            terminal.say(error_line(exc.error, self.config_dir))
            terminal.say('zeroclaw: not initialized; type `initialize {"authToken": "zc_…"}` to authenticate')
        else:
            if self.at_terminal:
                self.complete_method_names(client)
                principal = init.get("principal") or {}
                terminal.say(
                    f"connected to zeroclaw {init.get('serverVersion')} (pid {init.get('serverPid')}) as "
                    f"{principal.get('id')}\n{BANNER}"
                )

    def complete_method_names(self, client: Client) -> None:
        """Tab completes the daemon's method names, as its `rpc.discover` lists them."""
        try:
            methods = self.bg.run(discover(client))
        except (ConnectionError, RemoteError, KeyError, TypeError):
            return  # an older daemon without rpc.discover: no completion, the client works as before
        self.served = methods
        MethodCompleter([method["name"] for method in methods]).install()

    def methods(self) -> list[dict[str, Any]]:
        """The daemon's methods when it listed them, else this version's (for hints only)."""
        if self.served is None:
            from app.cli.method_hints import local_methods

            self.served = local_methods()
        return self.served

    @staticmethod
    def init_params(given: dict[str, Any]) -> dict[str, Any]:
        """A typed `initialize` keeps what the person wrote and adds what this client is (version, elicitation)."""
        params = {"protocolVersion": 1, "clientInfo": {"name": "zeroclaw-cli"}, **given}
        params.setdefault("clientCapabilities", CLIENT_CAPABILITIES)
        return params

    def send(self, frame: Any) -> None:
        self.send_line(orjson.dumps(frame))

    def expect_answers(self, line: bytes) -> None:
        """Note the ids of the requests in `line`, to wait for their answers at the end of the input."""
        try:
            sent = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        with self.lock:
            for frame in sent if isinstance(sent, list) else [sent]:
                if isinstance(frame, dict) and "method" in frame and _hashable(frame.get("id")):
                    self.outstanding.add(frame.get("id"))
                    self.settled.clear()

    def send_line(self, line: bytes) -> None:
        assert self.client is not None
        self.expect_answers(line)
        try:
            self.bg.run(self.client.send_raw(line))
        except OSError:  # ConnectionError included: the daemon is gone
            raise CliError(self.lost_message()) from None

    def answer(self, line: str | None) -> None:
        """The line typed while a question is open answers it (None: Ctrl-D cancels it)."""
        with self.lock:
            rid, question = self.questions[0]
        result = question.answer(line)
        if result is None:
            terminal.write_out(f"? {question.retry_text()}\n")
            return
        with self.lock:
            self.questions.popleft()
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def handle(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        if line.startswith("{") or line.startswith("["):
            self.send_line(line.encode())  # verbatim, as on the wire
            return
        method, _, rest = line.partition(" ")
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": f"cli-{self.next_id}"}
        self.next_id += 1
        try:
            params = orjson.loads(rest) if rest.strip() else None
        except orjson.JSONDecodeError:
            from app.cli.method_hints import params_example

            terminal.say(f"params must be JSON, e.g. {method} {params_example(method, self.methods())}")
            return
        if method == "initialize":
            params = self.init_params(params if isinstance(params, dict) else {})
        if params is not None:
            frame["params"] = params
        self.send(frame)  # as typed: the daemon's answer says what it says; a hint for a name it does not serve
        if not method.startswith("rpc.") and method != "initialize":
            from app.cli.method_hints import did_you_mean

            if (meant := did_you_mean(method, [m["name"] for m in self.methods()])) is not None:
                terminal.say(f"zeroclaw: no method {method}; did you mean `{meant}`?")

    def run(self) -> int:
        self.start()
        while True:
            line = terminal.read_line(self.prompt())
            if self.stdout_closed:
                raise terminal.StdoutClosed
            with self.lock:
                asking = bool(self.questions)
            if asking and (line is not None or sys.stdin.isatty()):
                self.answer(line)  # Ctrl-D at a terminal cancels the question
            elif line is None:
                return self.finish()
            else:
                self.handle(line)

    def finish(self) -> int:
        """End of input: cancel the open questions, then wait for the answers to what was sent."""
        self.ending = True
        with self.lock:
            open_questions = [rid for rid, _question in self.questions]
            self.questions.clear()
        for rid in open_questions:
            self.send({"jsonrpc": "2.0", "id": rid, "result": CANCEL})
        while not self.lost and not self.settled.wait(0.1):
            with self.lock:
                if not self.outstanding:
                    break
        if self.stdout_closed:
            raise terminal.StdoutClosed
        if self.lost:
            terminal.say(self.lost_message())
            return 1
        return 0

    def prompt(self) -> str:
        """The prompt for `input()`: on stdout when it is the terminal too, else on stderr (the output stays only
        frames); none for piped input."""
        if not self.at_terminal:
            return ""
        if self.prompt_on_stdout:
            return PROMPT
        sys.stderr.write(PROMPT)
        sys.stderr.flush()
        return ""

    def close(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.bg.run(self.client.close(), timeout=2)
        self.bg.close()


def interactive(config_dir: str | None) -> int:
    """Like `socat - UNIX-CONNECT:…` with line editing and history, initialized and answering questions."""
    history = _history_file(config_dir)
    _load_history(history)
    session = _Interactive(config_dir)
    try:
        return session.run()
    except KeyboardInterrupt:
        terminal.ignore_interrupts()
        if session.stdout_closed:  # `interrupt_reading` woke the prompt: nobody reads the output any more
            raise terminal.StdoutClosed from None
        if session.lost:
            terminal.say(session.lost_message())
            return 1
        print(file=sys.stderr)
        terminal.say("zeroclaw: interrupted; left the interactive client")
        return terminal.EXIT_INTERRUPTED
    finally:
        terminal.ignore_interrupts()
        _save_history(history)
        session.close()


def _load_history(history: Path) -> None:
    """Line editing and history from `readline` (imported here, it also turns on editing for `input()`); Windows
    has none, and plain `input()` works there."""
    if sys.platform == "win32":
        return
    try:
        import readline
    except ImportError:
        return
    with contextlib.suppress(OSError):
        readline.read_history_file(history)


def _save_history(history: Path) -> None:
    if sys.platform == "win32" or "readline" not in sys.modules:
        return
    import readline

    with contextlib.suppress(OSError):
        readline.write_history_file(history)
        os.chmod(history, 0o600)
