"""zerocode against a real daemon (SPEC §17, R-ZC-1..6).

The client here speaks exactly as zerocode v0.8.4 does: every frame comes from `zerocode_frames` (copied from
zerocode's source at tag v0.8.4, cited `path:line` there), and every frame the daemon sends is judged the way
zerocode's code reads it (`zerocode_frames.classify_frame` for routing, the `check_*` functions for results and
notifications, `check_session_update(strict=True)` for every `session/update`). The oracle is what ZeroClaw
0.8.4's own daemon writes (the research notes cite `crates/zeroclaw-runtime/src/rpc/dispatch.rs` and `types.rs`).

Citations below abbreviate `apps/zerocode/src/<file>` as `zc:<file>` and `crates/zeroclaw-runtime/src/rpc/<file>`
as `rt:<file>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import zerocode_frames as zc
from e2e_harness import Client, Daemon, DaemonFactory
from session_client import Peer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

# Long enough that a free-form question or an approval that waited for its timeout could not pass for "fast".
ASK_TIMEOUT = 30
APPROVAL_TIMEOUT = 30
TURN_TIMEOUT = 15.0

CONFIG = f"""\
[tools]
ask_timeout_secs = {ASK_TIMEOUT}
approval_timeout_secs = {APPROVAL_TIMEOUT}
bash_timeout_secs = 20
"""

# rt:dispatch.rs:1932-1968: the turn_complete content of a turn cancelled by session/cancel.
CANCEL_CONTENT = (
    "turn cancelled via client_rpc in RPC_SESSION {sid}",
    "turn cancelled (cause unattributed) in RPC_SESSION {sid}",
)
# crates/zeroclaw-runtime/locales/en/cli.ftl:923-924 (history-trim-reason-message-cap).
TRIM_REASON_MESSAGE_CAP = "history message limit exceeded"

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def assert_snake(value: Any, ctx: str) -> None:
    """R-ZC-2: the keys ZeroClaw writes are snake_case (top level, and the objects of top-level lists)."""
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        assert SNAKE.match(key), f"{ctx}: key {key!r} is not snake_case (ZeroClaw 0.8.4 writes snake_case): {value}"
        if isinstance(item, list):
            for entry in item:
                if isinstance(entry, dict):
                    for k in entry:
                        assert SNAKE.match(k), f"{ctx}.{key}[]: key {k!r} is not snake_case: {entry}"


def rfc3339(value: str, ctx: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise AssertionError(f"{ctx}: {value!r} is not an RFC 3339 timestamp") from None
    assert parsed.tzinfo is not None, f"{ctx}: {value!r} has no UTC offset (ZeroClaw writes to_rfc3339())"
    return parsed


# ------------------------------------------------------------------------------------------- the client


class Zerocode:
    """One connection as zerocode's `RpcClient` makes it (zc:client.rs:531-569, zc:jsonrpc.rs).

    Requests carry string ids `zc-out-N` from a per-connection counter (zc:jsonrpc.rs:152-158). A reader task
    classifies every inbound line as zerocode does (`zc.classify_frame`); whatever zerocode would drop, ignore or
    fail to parse is recorded in `problems`, and every test ends with `assert_clean()`.
    """

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = name
        self.ids = zc.IdGen()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.frames: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []  # session/update params (all of them, checked)
        self.log_events: list[dict[str, Any]] = []  # logs/event params
        self.other_notifications: list[dict[str, Any]] = []
        self.daemon_requests: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.eof = False
        self._changed = asyncio.Condition()
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        self.tui_id: str | None = None
        self.tui_sig: str | None = None

    @classmethod
    async def open(
        cls,
        daemon: Daemon,
        *,
        env: dict[str, str] | None = None,
        tui_id: str | None = None,
        tui_sig: str | None = None,
        name: str = "zerocode",
    ) -> tuple[Zerocode, dict[str, Any]]:
        """Connect and `initialize` as zerocode (zc:client.rs:665-689): `protocol_version`, `clientCapabilities`,
        the whole environment as `env`, and `tui_id`/`tui_sig` only on a reconnect (zc:app.rs:574-577)."""
        peer = cls(await daemon.connect(), name)
        params = zc.initialize_params(env=env, tui_id=tui_id, tui_sig=tui_sig)
        frame = await peer.request("initialize", params, timeout=zc.INITIALIZE_TIMEOUT_SECS)
        raw = peer.ok(frame, "initialize")
        checked = zc.check_initialize_result(raw)  # server_version == "0.8.4" or zerocode exits (zc:client.rs:481-489)
        peer.tui_id, peer.tui_sig = checked["tui_id"], checked["tui_sig"]
        return peer, raw

    async def __aenter__(self) -> Zerocode:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.client.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._reader, 2)

    # -- reading: zc:client.rs:632-662 (read_line, skip unparseable) and route_inbound_frame :531-569 --------

    async def _read_loop(self) -> None:
        try:
            while True:
                try:
                    line = await self.client.reader.readline()
                except (ConnectionResetError, BrokenPipeError, ValueError):
                    break
                if not line:
                    break
                if line.strip():
                    self._route(line.decode("utf-8", "replace"))
                async with self._changed:
                    self._changed.notify_all()
        finally:
            self.eof = True
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(AssertionError(f"{self.name}: the daemon closed the connection"))
            async with self._changed:
                self._changed.notify_all()

    def _problem(self, text: str) -> None:
        self.problems.append(f"{self.name}: {text}")

    def _route(self, line: str) -> None:
        kind, frame = zc.classify_frame(line)
        if kind == "unparseable":
            self._problem(f"unparseable line (zerocode skips it, zc:client.rs:652-655): {line[:300]!r}")
            return
        if kind == "ignored":
            self._problem(f"frame zerocode ignores (zc:client.rs:551-567): {line[:300]!r}")
            return
        self.frames.append(frame)
        if kind == "response":
            fut = self._pending.pop(frame["id"], None)
            if fut is None:
                self._problem(f"response to an id zerocode never sent: {line[:300]!r}")
            elif not fut.done():
                fut.set_result(frame)
        elif kind == "request":
            self.daemon_requests.append(frame)
            if frame["method"] != "elicitation/create":  # the only one zerocode handles (zc:chat.rs:617-635)
                self._problem(f"daemon request zerocode answers -32601: {line[:300]!r}")
            else:
                try:
                    zc.check_elicitation_create_params(frame.get("params"))
                except AssertionError as exc:
                    self._problem(f"elicitation/create zerocode cannot show: {exc}")
        else:  # notification
            method, params = frame["method"], frame.get("params")
            if method == "session/update":
                try:
                    zc.check_session_update(params, strict=True)
                    assert_snake(params, f"session/update[{params.get('type')}]")
                except AssertionError as exc:
                    self._problem(f"session/update zerocode drops or misreads: {exc}")
                if isinstance(params, dict):
                    self.updates.append(params)
            elif method == "logs/event":
                try:
                    zc.check_logs_event_params(params)
                except AssertionError as exc:
                    self._problem(f"logs/event zerocode's Logs pane drops (zc:logs.rs:642-646): {exc}")
                self.log_events.append(params if isinstance(params, dict) else {"raw": params})
            else:
                self.other_notifications.append(frame)

    def assert_clean(self) -> None:
        assert not self.problems, "frames zerocode cannot read:\n" + "\n".join(self.problems)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"{what} not seen within {timeout} s; last updates={self.updates[-12:]}; "
                        f"problems={self.problems[-5:]}"
                    )
                if self.eof:
                    raise AssertionError(f"{what}: the connection closed first; updates={self.updates[-12:]}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

    # -- sending: zc:jsonrpc.rs:42-87, :168-233 ------------------------------------------------------------

    async def send(self, frame: dict[str, Any]) -> None:
        await self.client.send_raw(zc.encode(frame))

    async def start(self, method: str, params: Any) -> tuple[str, asyncio.Future[dict[str, Any]]]:
        rid = self.ids.next()
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._pending[rid] = fut
        await self.send(zc.request(method, params, rid))
        return rid, fut

    async def request(self, method: str, params: Any, *, timeout: float = zc.CALL_TIMEOUT_SECS) -> dict[str, Any]:
        """The whole response frame; zerocode gives up on a call after 5 s (zc:client.rs:931-933)."""
        _, fut = await self.start(method, params)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise AssertionError(f"{self.name}: no answer to {method} {params} within zerocode's {timeout} s") from None

    @staticmethod
    def ok(frame: dict[str, Any], method: str) -> Any:
        """The raw result of a success response, judged as zerocode judges it (zc:client.rs:555-559, :931-954)."""
        zc.check_response_ok(frame, method)
        result = frame.get("result")
        assert_snake(result, f"{method} result")
        return result

    async def call(self, method: str, params: Any, *, timeout: float = zc.CALL_TIMEOUT_SECS) -> Any:
        return self.ok(await self.request(method, params, timeout=timeout), method)

    async def tolerated(self, method: str, params: Any) -> dict[str, Any]:
        """A call whose failure zerocode tolerates (research §2): it must still be answered (R-WIRE-5)."""
        return await self.request(method, params)

    async def notify(self, method: str, params: Any) -> None:
        await self.send(zc.notification(method, params))

    async def respond(self, rid: Any, result: Any) -> None:
        await self.send(zc.response_ok(rid, result))

    # -- sessions ------------------------------------------------------------------------------------------

    async def new_chat(self, alias: str, cwd: str | None, session_id: str | None = None) -> dict[str, Any]:
        """Chat pane `session/new` (zc:client.rs:1425-1437): no chat_mode, so chat by default."""
        result = await self.call("session/new", zc.session_new_chat_params(alias, cwd, self.tui_id, session_id))
        check_session_new(result, alias, cwd)
        return result  # type: ignore[no-any-return]

    async def new_acp(self, alias: str, cwd: str | None) -> dict[str, Any]:
        """Code pane `session/new` (zc:client.rs:1401-1420): `chat_mode: "acp"`, `exclude_memory: true`."""
        result = await self.call("session/new", zc.session_new_acp_params(alias, cwd, self.tui_id))
        check_session_new(result, alias, cwd)
        return result  # type: ignore[no-any-return]

    async def start_turn(self, sid: str, prompt: str) -> int:
        """`session/prompt` as zerocode sends it: a NOTIFICATION (zc:chat.rs:854-866). Returns the update mark."""
        mark = len(self.updates)
        await self.notify("session/prompt", zc.session_prompt_params(sid, prompt))
        return mark

    async def wait_update(
        self, kind: str, sid: str, start: int, timeout: float = TURN_TIMEOUT, what: str | None = None
    ) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            return next((u for u in self.updates[start:] if u.get("type") == kind and u.get("session_id") == sid), None)

        return await self.wait_for(find, timeout, what or f"session/update {kind!r} for {sid}")  # type: ignore[no-any-return]

    async def finish_turn(self, sid: str, mark: int, timeout: float = TURN_TIMEOUT) -> list[dict[str, Any]]:
        """This session's updates from `mark` through its `turn_complete` (zc:client.rs:265-273: the only end)."""
        await self.wait_update("turn_complete", sid, mark, timeout, what=f"turn_complete for {sid}")
        out = []
        for u in self.updates[mark:]:
            if u.get("session_id") != sid:
                continue
            out.append(u)
            if u.get("type") == "turn_complete":
                break
        return out

    async def turn(self, sid: str, prompt: str, timeout: float = TURN_TIMEOUT) -> list[dict[str, Any]]:
        return await self.finish_turn(sid, await self.start_turn(sid, prompt), timeout)


def check_session_new(result: Any, alias: str, cwd: str | None) -> None:
    """zc:client.rs:2741-2747 reads session_id (+ workspace_dir); ZeroClaw writes
    {session_id, agent_alias, message_count, workspace_dir} (rt:dispatch.rs:1328-1333)."""
    zc.check_session_new_result(result)
    assert result["agent_alias"] == alias, result
    assert zc._is_u64(result.get("message_count")), f"message_count must be an integer: {result}"
    assert isinstance(result.get("workspace_dir"), str), result
    if cwd is not None:
        assert result["workspace_dir"] == cwd, result


def types(updates: list[dict[str, Any]]) -> list[str]:
    return [u["type"] for u in updates]


def text_of(updates: list[dict[str, Any]]) -> str:
    return "".join(u["text"] for u in updates if u["type"] == "agent_message_chunk")


def completed(updates: list[dict[str, Any]], outcome: str = "completed") -> dict[str, Any]:
    """The turn's `turn_complete` (last, exactly one), with the expected outcome."""
    assert updates and updates[-1]["type"] == "turn_complete", types(updates)
    assert types(updates).count("turn_complete") == 1, types(updates)
    last = zc.check_session_update(updates[-1], "turn_complete", strict=True)
    assert last["outcome"] == outcome, (last, types(updates))
    return last


def zerocode_env(**extra: str) -> dict[str, str]:
    """What zerocode forwards: its whole environment (zc:client.rs:683-689)."""
    env = dict(os.environ)
    env.update(extra)
    return env


def workdir(daemon: Daemon) -> str:
    """zerocode sends its own process cwd (zc:chat.rs:437-451): an existing absolute directory."""
    path = daemon.root / "project"
    path.mkdir(exist_ok=True)
    return str(path)


async def open_with_agent(daemon: Daemon, **kw: Any) -> tuple[Zerocode, str]:
    """A zerocode connection and the agent its panes would use: `agents/status`, the enabled one
    (zc:chat.rs:248-267; with exactly one, both panes create their session at once)."""
    peer, _ = await Zerocode.open(daemon, **kw)
    agents = zc.check_agents_status_result(await peer.call("agents/status", zc.FRAMES["agents/status"]))
    enabled = [a["alias"] for a in agents if a["enabled"]]
    assert len(enabled) == 1, f"zerocode creates sessions only with exactly one enabled agent: {agents}"
    return peer, enabled[0]


@pytest.fixture
def zc_daemon(daemon_factory: DaemonFactory) -> Daemon:
    return daemon_factory.start(CONFIG)


# ------------------------------------------------------------------------------------------- 1. start-up


@pytest.mark.req("R-ZC-1")
@pytest.mark.req("R-ZC-2")
@pytest.mark.req("R-ZC-3")
@pytest.mark.req("R-ZC-4")
async def test_startup_as_zerocode_does_it(zc_daemon: Daemon) -> None:
    """Research §2: initialize, Dashboard, Config, Code (ACP) pane, Chat pane, Logs, Quickstart, chrome status.
    Fatal steps must succeed; tolerated ones must still be answered; nothing sent may fail zerocode's parsing."""
    cwd = workdir(zc_daemon)
    peer, init = await Zerocode.open(zc_daemon, env=zerocode_env())
    async with peer:
        # 1. initialize (zc:client.rs:665-689): ZeroClaw answers {protocol_version, server_version, tui_id, ...}
        # (rt:dispatch.rs:909-920); zerocode exits unless server_version == "0.8.4" (zc:client.rs:481-489).
        assert init["server_version"] == "0.8.4", init
        assert init.get("protocol_version") == 1, init
        assert isinstance(init.get("tui_id"), str) and init["tui_id"], init
        assert "serverVersion" not in init, init

        # 2. Dashboard poll_data (zc:dashboard.rs:224-273): tolerated.
        await peer.tolerated("cost/query", zc.FRAMES["cost/query"])
        await peer.tolerated("agents/status", zc.FRAMES["agents/status"])
        await peer.tolerated("tui/list", zc.FRAMES["tui/list"])

        # 3-4a. Config pane (zc:config_manager.rs:414-420): all FATAL.
        sections = await peer.call("config/sections", zc.FRAMES["config/sections"])
        parsed = zc.check_config_sections_result(sections)
        zc.check_config_templates_result(await peer.call("config/templates", zc.FRAMES["config/templates"]))
        if parsed:
            first = zc.first_section(parsed)  # stable, as zc:config_manager.rs:3354-3370
            if first["shape"] == "one_tier_alias_map":  # zc:config_manager.rs:1335-1358
                zc.check_config_map_keys_result(await peer.call("config/map-keys", {"path": first["key"]}))
            elif first["shape"] == "typed_family_map":  # tolerated per template (zc:config_manager.rs:1279-1291)
                pass
            else:  # None / direct_form / backend_picker -> config/list {prefix} (zc:config_manager.rs:1729-1760)
                zc.check_config_list_result(await peer.call("config/list", {"prefix": first["key"]}))

        # 5-7. Code pane (ACP): agents/status, session/list-acp, session/new with chat_mode "acp".
        raw_agents = await peer.call("agents/status", zc.FRAMES["agents/status"])
        agents = zc.check_agents_status_result(raw_agents)
        for entry in raw_agents["agents"]:  # R-ZC-4: each agent with its live and stored session counts
            assert zc._is_u64(entry.get("live_sessions")), entry
            assert zc._is_u64(entry.get("persisted_sessions")), entry
        enabled = [a["alias"] for a in agents if a["enabled"]]
        assert len(enabled) == 1, f"one configured agent, so zerocode auto-creates both sessions: {agents}"
        alias = enabled[0]
        acp_listed = zc.check_session_list_result(
            await peer.call("session/list-acp", zc.FRAMES["session/list-acp"]), "session/list-acp"
        )
        assert acp_listed == [], f"a fresh daemon has no ACP session (else zerocode shows a picker): {acp_listed}"
        await peer.tolerated("config/list", {"prefix": "todotracker"})  # zc:chat.rs:421-428
        acp = await peer.new_acp(alias, cwd)
        await peer.tolerated("config/list", {"prefix": f"agents.{alias}.model_provider"})  # zc:chat.rs:1874-1905

        # 8. Chat pane: agents/status, then session/new without chat_mode (chat by default, rt:dispatch.rs:1016).
        zc.check_agents_status_result(await peer.call("agents/status", zc.FRAMES["agents/status"]))
        await peer.tolerated("config/list", {"prefix": "todotracker"})
        chat = await peer.new_chat(alias, cwd)
        assert chat["session_id"] != acp["session_id"]
        await peer.tolerated("config/list", {"prefix": f"agents.{alias}.model_provider"})

        # 9-10. Logs pane: logs/subscribe is FATAL (zc:logs.rs:519-525); ZeroClaw answers {"subscribed": true}
        # (rt:dispatch.rs:3859-3902). logs/query is tolerated.
        subscribed = await peer.call("logs/subscribe", zc.FRAMES["logs/subscribe"])
        assert subscribed == {"subscribed": True}, subscribed
        await peer.tolerated("logs/query", zc.FRAMES["logs/query"])

        # 11. Quickstart pane (tolerated); 12. chrome status + health (zc:app.rs:403-413).
        await peer.tolerated("quickstart/state", zc.FRAMES["quickstart/state"])
        status = zc.check_status_result(await peer.call("status", zc.FRAMES["status"]))
        assert status["server_version"] == "0.8.4", status
        assert status["protocol_version"] == 1, status
        assert status["active_sessions"] >= 2, status  # the two sessions just made
        await peer.tolerated("health", zc.FRAMES["health"])

        # logs/event: a log record of the daemon's, made by another connection (connect + a refused call).
        mark = len(peer.log_events)
        other = await zc_daemon.connect()
        async with other:
            await other.call("initialize", {"protocolVersion": 1})
            await other.request("no/such-method", {})
            await other.request("session/cancel", {"sessionId": "s_" + "0" * 32})
        await peer.wait_for(lambda: len(peer.log_events) > mark, 5.0, "a logs/event notification")
        for params in peer.log_events:
            zc.check_logs_event_params(params)
        peer.assert_clean()


# --------------------------------------------------------------------------------------- 2. streamed turn


@pytest.mark.req("R-ZC-2")
@pytest.mark.req("R-MODEL-5")
async def test_streamed_turn_sent_as_a_notification(zc_daemon: Daemon) -> None:
    peer, alias = await open_with_agent(zc_daemon, env=zerocode_env())
    async with peer:
        sid = (await peer.new_chat(alias, workdir(zc_daemon)))["session_id"]
        updates = await peer.turn(sid, "hello from zerocode")
        # ZeroClaw 0.8.4 knows no `usage` update nor `turn_complete.usage` (checked strictly below): neither is sent.
        assert set(types(updates)) == {"agent_message_chunk", "turn_complete"}, types(updates)
        last = completed(updates)
        # rt:dispatch.rs:1919-1925: a completed turn's content is the final assistant text.
        assert last["content"] == "You said: «hello from zerocode»", last
        assert text_of(updates) == last["content"], updates
        # A notification gets no answer (rt:dispatch.rs:703-720): nothing arrived with an id (see assert_clean).

        # The legacy request form is answered `{}` once the turn ends (rt:dispatch.rs:703-720); the final text
        # travels only in turn_complete (R-ZC-2).
        mark = len(peer.updates)
        _, fut = await peer.start("session/prompt", zc.session_prompt_params(sid, "second turn"))
        response = await asyncio.wait_for(fut, TURN_TIMEOUT)
        assert response.get("result") == {}, response
        second = await peer.finish_turn(sid, mark)
        assert completed(second)["content"] == "You said: «second turn»"
        peer.assert_clean()


# ---------------------------------------------------------------------------------- 3. tool call + approval


@pytest.mark.req("R-ZC-2")
@pytest.mark.req("R-ZC-5")
async def test_tool_call_with_approval(zc_daemon: Daemon) -> None:
    peer, alias = await open_with_agent(zc_daemon, env=zerocode_env())
    async with peer:
        sid = (await peer.new_chat(alias, workdir(zc_daemon)))["session_id"]
        mark = await peer.start_turn(sid, "/bash echo hi")
        request = await peer.wait_update("approval_request", sid, mark)
        # zc:client.rs:325-331; ZeroClaw builds it in rt:approval_channel.rs:155-167 (timeout_secs = as_secs()).
        ask = zc.check_session_update(request, "approval_request", strict=True)
        assert ask["tool_name"] == "bash", ask
        assert isinstance(ask["arguments_summary"], str) and "echo hi" in ask["arguments_summary"], ask
        assert ask["timeout_secs"] == APPROVAL_TIMEOUT, ask
        ack = await peer.call("session/approve", zc.session_approve_params(sid, ask["request_id"], "allow_once"))
        zc.check_session_approve_result(ack)
        # rt:dispatch.rs:2447-2453
        assert ack == {"session_id": sid, "request_id": ask["request_id"], "acknowledged": True}, ack
        updates = await peer.finish_turn(sid, mark)
        assert types(updates)[:3] == ["tool_call", "approval_request", "tool_result"], types(updates)
        call = zc.check_session_update(updates[0], "tool_call", strict=True)
        result = zc.check_session_update(updates[2], "tool_result", strict=True)
        assert call["name"] == "bash" and call["raw_input"] == {"command": "echo hi"}, call
        assert result["tool_call_id"] == call["tool_call_id"], (call, result)
        assert "hi" in result["raw_output"], result
        last = completed(updates)
        assert "hi" in last["content"] and text_of(updates) == last["content"], updates

        # An unknown request_id is acknowledged (rt:dispatch.rs:2447-2453, rt:context.rs:66-77).
        unknown = await peer.call("session/approve", zc.session_approve_params(sid, "apr_no_such_request", "reject"))
        assert unknown == {"session_id": sid, "request_id": "apr_no_such_request", "acknowledged": True}, unknown

        # reject_with_edit with replacement (zc:client.rs:1482-1484) is accepted: Deny (rt:dispatch.rs:2428-2454),
        # so the original command never runs.
        mark = await peer.start_turn(sid, "/bash echo orig-$((6*7))")
        request = await peer.wait_update("approval_request", sid, mark)
        rid = request["request_id"]
        edit = zc.session_approve_params(sid, rid, "reject_with_edit", replacement="echo edited")
        assert edit["replacement"] == "echo edited"
        ack = await peer.call("session/approve", edit)
        assert ack == {"session_id": sid, "request_id": rid, "acknowledged": True}, ack
        updates = await peer.finish_turn(sid, mark)
        last = zc.check_session_update(updates[-1], "turn_complete", strict=True)
        assert "orig-42" not in json.dumps(updates), f"a rejected command ran: {updates}"
        assert last["outcome"] in zc.TURN_OUTCOMES, last
        peer.assert_clean()


# -------------------------------------------------------------------------------------- 4. questions


@pytest.mark.req("R-ZC-2")
@pytest.mark.req("R-ZC-5")
async def test_choice_question_and_free_form_question(zc_daemon: Daemon) -> None:
    peer, alias = await open_with_agent(zc_daemon, env=zerocode_env())
    async with peer:
        sid = (await peer.new_chat(alias, workdir(zc_daemon)))["session_id"]
        mark = await peer.start_turn(sid, "/poll Pick | A | B")
        request = await peer.wait_for(
            lambda: peer.daemon_requests[0] if peer.daemon_requests else None, TURN_TIMEOUT, "elicitation/create"
        )
        assert request["method"] == "elicitation/create", request
        rid = request["id"]
        assert isinstance(rid, str), f"zerocode matches only string ids (zc:client.rs:551-561): {request}"
        params = request["params"]
        # zc:wire.rs:502-510 reads camelCase sessionId/requestedSchema; ZeroClaw builds them in
        # crates/zeroclaw-api/src/elicitation.rs:67-75 and :122-194 (property "choice", oneOf const/title).
        shape = zc.check_elicitation_create_params(params)
        assert shape["session_id"] == sid and params["mode"] == "form", params
        assert isinstance(params["message"], str) and params["message"], params
        assert shape["kind"] == "single", shape
        assert shape["choices"] == [{"const": "choice-0", "title": "A"}, {"const": "choice-1", "title": "B"}], shape
        prop = params["requestedSchema"]["properties"][shape["property"]]
        assert prop["oneOf"] == shape["choices"], prop  # every option has its string const and title
        # zerocode's answer for row 1 (zc:chat.rs:1184-1206, :4786-4788)
        answered_at = len(peer.frames)
        await peer.respond(rid, zc.elicitation_accept_single(1))
        # The other pane may answer `cancel` to the same id after its 2 s grace (zc:chat.rs:661-727): ignored.
        await peer.respond(rid, zc.elicitation_cancel())
        updates = await peer.finish_turn(sid, mark)
        last = completed(updates)
        assert last["content"] == "Choice: «B»", last  # the scripted agent quotes the decoded option
        tool_results = [u for u in updates if u["type"] == "tool_result"]
        assert len(tool_results) == 1 and tool_results[0]["raw_output"] == "B", tool_results
        # a barrier: the reader hands responses on as it reads them, so a reply to one would come before this
        barrier = await peer.request("status", zc.FRAMES["status"])
        replies = [f for f in peer.frames[answered_at:] if "method" not in f and f.get("id") != barrier["id"]]
        assert not replies, f"the daemon answered zerocode's answers (they must be ignored): {replies}"

        # A free-form question fails at once with a tool error (ZeroClaw: supports_free_form_ask() == false,
        # rt:approval_channel.rs:89-95; crates/zeroclaw-tools/src/ask_user.rs:233-241): no elicitation/create.
        asked = len(peer.daemon_requests)
        started = time.monotonic()
        updates = await peer.turn(sid, "/ask What is your name?")
        elapsed = time.monotonic() - started
        assert len(peer.daemon_requests) == asked, f"a free-form question was sent: {peer.daemon_requests[asked:]}"
        assert elapsed < 5, f"the free-form question took {elapsed:.1f} s (ask timeout {ASK_TIMEOUT} s)"
        calls = [u for u in updates if u["type"] == "tool_call"]
        results = [u for u in updates if u["type"] == "tool_result"]
        assert [c["name"] for c in calls] == ["ask_user"], types(updates)
        assert len(results) == 1 and results[0]["raw_output"].strip(), results
        last = completed(updates)
        assert results[0]["raw_output"] in last["content"], (results, last)
        peer.assert_clean()


# ---------------------------------------------------------------------------------------------- 5. cancel


@pytest.mark.req("R-ZC-2")
async def test_cancel_a_running_turn(zc_daemon: Daemon) -> None:
    peer, alias = await open_with_agent(zc_daemon, env=zerocode_env())
    async with peer:
        sid = (await peer.new_chat(alias, workdir(zc_daemon)))["session_id"]
        mark = await peer.start_turn(sid, "/sleep 5")
        await peer.wait_update("agent_message_chunk", sid, mark)
        started = time.monotonic()
        cancelled = await peer.call("session/cancel", {"session_id": sid})  # zc:client.rs:1439-1445
        zc.check_session_cancel_result(cancelled)
        assert cancelled == {"session_id": sid, "cancelled": True}, cancelled  # rt:types.rs:247-252
        updates = await peer.finish_turn(sid, mark, timeout=4.0)
        assert time.monotonic() - started < 3, "the cancelled turn did not end promptly"
        last = completed(updates, "cancelled")
        # rt:dispatch.rs:1932-1968: the attribution sentence, never the streamed text again.
        assert last["content"] in [c.format(sid=sid) for c in CANCEL_CONTENT], last
        peer.assert_clean()


# ------------------------------------------------------------------------------------------------ 6. trim


@pytest.mark.req("R-ZC-2")
async def test_history_trimmed(daemon_factory: DaemonFactory) -> None:
    """zerocode's Code pane (an ACP session). ZeroClaw trims chat sessions too (`Agent::trim_history`,
    crates/zeroclaw-runtime/src/agent/agent.rs:1720-1790); this daemon trims ACP sessions only, with a committed
    snapshot, so the Chat pane never sees `history_trimmed` (docs/zerocode.md, "What differs")."""
    daemon = daemon_factory.start(CONFIG + "\n[context]\nmax_messages = 4\n")
    peer, alias = await open_with_agent(daemon, env=zerocode_env())
    async with peer:
        sid = (await peer.new_acp(alias, workdir(daemon)))["session_id"]
        trims: list[dict[str, Any]] = []
        for n in range(1, 6):
            updates = await peer.turn(sid, f"message number {n}")
            completed(updates)
            found = [u for u in updates if u["type"] == "history_trimmed"]
            if found:
                break
        assert found, "no history_trimmed although the history exceeded max_messages = 4"
        for u in found:
            trims.append(zc.check_session_update(u, "history_trimmed", strict=True))  # zc:client.rs:337-342
        for t in trims:
            assert t["dropped_messages"] >= 1, t
            assert 0 <= t["kept_turns"] <= n, t
            assert t["reason"] == TRIM_REASON_MESSAGE_CAP, t
        assert types(updates).index("history_trimmed") < types(updates).index("turn_complete"), types(updates)
        peer.assert_clean()


# ------------------------------------------------------------------------------- 7. list, resume and close


@pytest.mark.req("R-ZC-2")
@pytest.mark.req("R-ZC-4")
async def test_list_messages_resume_close(zc_daemon: Daemon) -> None:
    cwd = workdir(zc_daemon)
    peer, alias = await open_with_agent(zc_daemon, env=zerocode_env())
    async with peer:
        tui_id, tui_sig = peer.tui_id, peer.tui_sig
        acp = (await peer.new_acp(alias, cwd))["session_id"]
        chat = (await peer.new_chat(alias, cwd))["session_id"]
        completed(await peer.turn(acp, "hello acp"))
        completed(await peer.turn(chat, "hello chat"))

        # session/list: chat sessions only (rt:dispatch.rs:2193-2282); entries as zc:client.rs:2876-2896.
        raw = await peer.call("session/list", zc.FRAMES["session/list"])
        listed = {e["session_id"]: e for e in zc.check_session_list_result(raw, "session/list")}
        assert chat in listed and acp not in listed, listed
        entry = listed[chat]
        assert entry["agent_alias"] == alias and entry["message_count"] == 2, entry
        assert entry["session_key"], entry
        assert rfc3339(entry["created_at"], "created_at") <= rfc3339(entry["last_activity"], "last_activity")

        # session/list-acp: ACP sessions only, session_key == session_id (rt:dispatch.rs:2263-2279).
        raw = await peer.call("session/list-acp", zc.FRAMES["session/list-acp"])
        listed_acp = {e["session_id"]: e for e in zc.check_session_list_result(raw, "session/list-acp")}
        assert acp in listed_acp and chat not in listed_acp, listed_acp
        entry = listed_acp[acp]
        assert entry["session_key"] == acp and entry["agent_alias"] == alias and entry["message_count"] == 2, entry
        rfc3339(entry["created_at"], "created_at")
        rfc3339(entry["last_activity"], "last_activity")

        # session/messages {session_id} (zc:client.rs:1617-1623) -> {session_id, messages, total, start}
        # (rt:dispatch.rs:2284-2363: start = end - limit).
        raw = await peer.call("session/messages", zc.session_messages_params(chat))
        msgs = zc.check_session_messages_result(raw)
        assert raw["session_id"] == chat and "total" in raw and "start" in raw, raw
        assert [(m["role"], m["content"]) for m in msgs["messages"]] == [
            ("user", "hello chat"),
            ("assistant", "You said: «hello chat»"),
        ], msgs
        assert msgs["start"] == msgs["total"] - len(msgs["messages"]), msgs
        # issue 29 §4.9: `turn_ends` is ZeroClaw-native; the zerocode answer keeps its shape
        # (rpc/dialects/zerocode/)
        assert await peer.call("session/messages", {**zc.session_messages_params(chat), "turn_ends": True}) == raw
        peer.assert_clean()

    # zerocode reconnects (zc:app.rs:557-620): initialize with the old tui_id/tui_sig; ZeroClaw keeps the id
    # when it verifies (rt:dispatch.rs:868-889).
    again, init = await Zerocode.open(zc_daemon, env=zerocode_env(), tui_id=tui_id, tui_sig=tui_sig, name="reconnect")
    async with again:
        assert init["server_version"] == "0.8.4" and init["tui_id"] == tui_id, init
        # Resume: session/new with the old id and cwd null (zc:chat.rs:1775-1822; FRAMES["session/new#resume"]).
        resumed = await again.new_chat(alias, None, session_id=chat)
        assert resumed["session_id"] == chat and resumed["message_count"] == 2, resumed
        raw = await again.call("session/messages", zc.session_messages_params(chat))
        assert [m["content"] for m in zc.check_session_messages_result(raw)["messages"]] == [
            "hello chat",
            "You said: «hello chat»",
        ], raw
        completed(await again.turn(chat, "hello again"))
        closed = await again.call("session/close", {"session_id": chat})  # zc:client.rs:1488-1494
        assert closed == {"session_id": chat, "closed": True}, closed  # rt:dispatch.rs:1336-1401
        again.assert_clean()


# -------------------------------------------------------------------------- 8. the standard dialect stays


@pytest.mark.req("R-ZC-1")
@pytest.mark.req("R-ZC-3")
@pytest.mark.parametrize(
    "init",
    [
        {"protocol_version": 1},
        {"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}},
    ],
    ids=["snake-version", "snake-version-with-capabilities"],
)
async def test_generic_client_keeps_the_standard_dialect(zc_daemon: Daemon, init: dict[str, Any]) -> None:
    client = await zc_daemon.connect()
    async with client:
        result = await client.call("initialize", init)
        assert result["serverVersion"] == importlib.metadata.version("zeroclaw"), result
        assert "server_version" not in result and "tui_id" not in result, result
        sid = (await client.call("session/new", {}))["sessionId"]
        response = await client.request("session/prompt", {"session_id": sid, "prompt": "plain"}, timeout=TURN_TIMEOUT)
        assert response["result"]["sessionId"] == sid and response["result"]["stopReason"] == "end_turn", response
        updates = [n["params"] for n in client.notifications if n.get("method") == "session/update"]
        assert updates and updates[-1]["type"] == "turn_complete", updates
        for u in updates:
            assert u.get("sessionId") == sid and "session_id" not in u, u
        assert "stopReason" in updates[-1] and "outcome" not in updates[-1], updates[-1]


# --------------------------------------------------------------------------------------------- 9. the env


@pytest.mark.req("R-ZC-6")
async def test_env_reaches_the_bash_tool_and_is_never_logged(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG + '\n[agents.auto]\nauto_approve = ["bash"]\n', args=["--log-level", "debug"])
    mark, secret = f"zcmark{uuid.uuid4().hex}", f"zcsecret{uuid.uuid4().hex}"
    env = zerocode_env(ZC_TEST_MARK=mark, ZC_TEST_SECRET_TOKEN=secret)
    # Two agents are configured here (the control below needs an auto-approving one), so pick "default" directly.
    peer, _ = await Zerocode.open(daemon, env=env)
    async with peer:
        await peer.call("logs/subscribe", {})
        assert peer.tui_id, "initialize gave no tui_id"
        # ZeroClaw looks the env up by session/new's tui_id (rt:dispatch.rs:1078-1101) and overlays it on the
        # shell tool's environment (crates/zeroclaw-runtime/src/tools/shell.rs:328-348).
        sid = (await peer.new_chat("default", workdir(daemon)))["session_id"]
        turn = await peer.start_turn(sid, '/bash echo "[$ZC_TEST_MARK]" | tr a-z A-Z')
        request = await peer.wait_update("approval_request", sid, turn)
        await peer.call("session/approve", zc.session_approve_params(sid, request["request_id"], "allow_once"))
        updates = await peer.finish_turn(sid, turn)
        completed(updates)
        (result,) = [u for u in updates if u["type"] == "tool_result"]
        assert f"[{mark.upper()}]" in result["raw_output"], result

        # The daemon's own environment is unchanged: a standard client's bash does not see it.
        control = await Peer.open(daemon)
        closed = daemon.stderr_mark()
        async with control:
            csid = (await control.call("session/new", {"agentAlias": "auto"}))["sessionId"]
            cturn = await control.prompt(csid, '/bash echo "[${ZC_TEST_MARK:-}]" | tr a-z A-Z', timeout=TURN_TIMEOUT)
            (cres,) = cturn.of_type("tool_result")
            assert "[]" in cres["rawOutput"] and mark.upper() not in cres["rawOutput"], cres
        # the stderr reader has caught up once the control's disconnect line, written after all else, is read
        await daemon.wait_stderr("zeroclaw.audit: disconnect", after=closed)

        for value in (mark, secret):
            assert value not in daemon.stderr, "the forwarded env reached the daemon's log"
            audit = daemon.audit_path.read_text() if daemon.audit_path.exists() else ""
            assert value not in audit, "the forwarded env reached the audit log"
            assert value not in json.dumps(peer.log_events), "the forwarded env reached a logs/event"
        peer.assert_clean()
