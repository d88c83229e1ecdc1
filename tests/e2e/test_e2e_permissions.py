"""Permission rules from real turns over the socket (R-GUARD-1..3): deny (no one asked, the rule named), allow,
ask, compound commands that try to smuggle a second command past an allow rule, remembered rules across sessions
and a restart, deletion, and `reject_always`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import Daemon, DaemonFactory
from session_client import Peer, check_turn, new_sid

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint")

CONFIG = """\
[tools]
approval_timeout_secs = 20

[permissions]
allow = ["bash(echo ok*)", "bash(true)"]
ask = ["bash(echo ok-but-ask*)"]
deny = ["bash(rm *)"]

[agents.default.permissions]
deny = ["write_file(secret/**)"]
"""

# Each runs `touch pwned` (or worse) behind `echo ok`, which the allow rule covers.
SMUGGLED = [
    "echo ok; touch pwned",
    "echo ok && touch pwned",
    "echo ok || touch pwned",
    "echo ok | sh -c 'touch pwned'",
    "echo ok $(touch pwned)",
    "echo ok `touch pwned`",
    "echo ok > pwned",
    "echo ok\ntouch pwned",
    "(echo ok; touch pwned)",
    "echo ok <(touch pwned)",
    "eval 'echo ok; touch pwned'",
    "BASH_ENV=x echo ok",
    "echo ok & touch pwned",
    'echo "ok $(touch pwned)"',
]


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[DaemonFactory, Daemon]]:
    factory = DaemonFactory()
    try:
        yield factory, factory.start(CONFIG)
    finally:
        factory.close()


def workspace(daemon: Daemon) -> Path:
    return daemon.data_dir / "workspaces" / "default"


async def run_allowed(owner: Peer, sid: str, prompt: str) -> str:
    turn = await owner.prompt(sid, prompt)
    check_turn(turn, sid)
    assert "approval_request" not in turn.types, turn.types
    return str(turn.of_type("tool_result")[0]["rawOutput"])


async def answer(owner: Peer, sid: str, prompt: str, decision: str, **extra: object) -> tuple[dict, str]:  # type: ignore[type-arg]
    """Prompt, answer its approval_request with `decision`; (the request, the tool result)."""
    mark, fut = await owner.start_prompt(sid, prompt)
    request = await owner.wait_update("approval_request", session_id=sid, start=mark)
    params = {"sessionId": sid, "requestId": request["requestId"], "decision": decision, **extra}
    await owner.call("session/approve", params)
    turn = await owner.finish_turn(sid, mark, fut)
    check_turn(turn, sid)
    return request, str(turn.of_type("tool_result")[0]["rawOutput"])


@pytest.mark.req("R-GUARD-1")
async def test_allow_rule_runs_without_asking(guarded: tuple[DaemonFactory, Daemon]) -> None:
    async with await Peer.open(guarded[1]) as owner:
        sid = await new_sid(owner)
        assert "ok-allowed" in await run_allowed(owner, sid, "/bash echo ok-allowed")


@pytest.mark.req("R-GUARD-1")
@pytest.mark.req("R-GUARD-2")
async def test_deny_rule_asks_nobody_and_names_the_rule(guarded: tuple[DaemonFactory, Daemon]) -> None:
    daemon = guarded[1]
    target = workspace(daemon) / "keep-me"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("x")
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        for command in ("rm -f keep-me", "echo ok && rm -f keep-me", "echo ok $(rm -f keep-me)"):
            result = await run_allowed(owner, sid, f"/bash {command}")
            assert "bash(rm *)" in result and "[permissions]" in result and "not run" in result, result
        result = await run_allowed(owner, sid, "/write secret/key | hunter2")
        assert "write_file(secret/**)" in result and "[agents.default.permissions]" in result, result
    assert target.exists() and not (workspace(daemon) / "secret").exists()


@pytest.mark.req("R-GUARD-1")
async def test_ask_rule_and_tool_defaults_ask(guarded: tuple[DaemonFactory, Daemon]) -> None:
    async with await Peer.open(guarded[1]) as owner:
        sid = await new_sid(owner)
        request, result = await answer(owner, sid, "/bash echo ok-but-ask", "allow_once")
        assert request["toolName"] == "bash" and "ok-but-ask" in result
        request, result = await answer(owner, sid, "/bash echo not-covered", "reject")  # bash's default
        assert "rejected" in result
        request, result = await answer(owner, sid, "/write notes.txt | hi", "allow_once")  # write_file asks too
        assert request["toolName"] == "write_file" and "Wrote" in result
        assert "File contents" in (await owner.prompt(sid, "/read notes.txt")).result["content"]  # read: allowed


@pytest.mark.req("R-GUARD-1")
@pytest.mark.parametrize("command", SMUGGLED)
async def test_a_second_command_is_not_smuggled_past_an_allow_rule(
    guarded: tuple[DaemonFactory, Daemon], command: str
) -> None:
    daemon = guarded[1]
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        request, result = await answer(owner, sid, f"/bash {command}", "reject")
        assert request["arguments"] == {"command": command} and "rejected" in result
    assert not (workspace(daemon) / "pwned").exists()


@pytest.mark.req("R-GUARD-3")
async def test_reject_always_lasts_for_the_session(guarded: tuple[DaemonFactory, Daemon]) -> None:
    async with await Peer.open(guarded[1]) as owner:
        sid = await new_sid(owner)
        await answer(owner, sid, "/bash echo first", "reject_always")
        result = await run_allowed(owner, sid, "/bash echo second")  # not asked again: rejected outright
        assert "rest of this session" in result and "not run" in result
        other = await new_sid(owner)
        await answer(owner, other, "/bash echo elsewhere", "reject")  # another session still asks


@pytest.mark.req("R-GUARD-3")
async def test_remembered_rules_across_sessions_restarts_and_deletion(daemon_factory: DaemonFactory) -> None:
    daemon = daemon_factory.start(CONFIG)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        _, result = await answer(owner, sid, "/bash echo remembered", "allow_always", remember="agent")
        assert "remembered" in result
        _, result = await answer(
            owner, sid, "/bash echo pattern-1", "allow_always", remember="agent", pattern="bash(echo pattern-*)"
        )
        # a pattern about another tool is not stored: the exact call is
        _, result = await answer(
            owner, sid, "/bash echo other-tool", "allow_always", remember="agent", pattern="write_file(**)"
        )
        code, _ = await owner.error(
            "session/approve", {"sessionId": sid, "requestId": "ap_x", "decision": "allow_always", "pattern": "bash("}
        )
        assert code == -32602
        listed = (await owner.call("permissions/list", {"agentAlias": "default"}))["rules"]
        expected = ["bash(echo remembered)", "bash(echo pattern-*)", "bash(echo other-tool)"]
        assert [r["pattern"] for r in listed] == expected
        assert all(r["decision"] == "allow" and r["agentAlias"] == "default" for r in listed)
        other = await new_sid(owner)  # another session of the same agent: not asked
        assert "remembered" in await run_allowed(owner, other, "/bash echo remembered")
        assert "pattern-2" in await run_allowed(owner, other, "/bash echo pattern-2")
        await answer(owner, other, "/bash echo remembered; echo more", "reject")  # only the exact command
    daemon.stop()
    daemon = daemon_factory.start(config_dir=daemon.config_dir, root=daemon.root)
    async with await Peer.open(daemon) as owner:
        sid = await new_sid(owner)
        assert "remembered" in await run_allowed(owner, sid, "/bash echo remembered")  # after a restart
        rules = (await owner.call("permissions/list"))["rules"]
        rule_id = next(r["ruleId"] for r in rules if r["pattern"] == "bash(echo remembered)")
        assert await owner.call("permissions/delete", {"ruleId": rule_id}) == {"ruleId": rule_id, "deleted": True}
        code, _ = await owner.error("permissions/delete", {"ruleId": rule_id})
        assert code == -32602
        left = [r["pattern"] for r in (await owner.call("permissions/list"))["rules"]]
        assert left == ["bash(echo pattern-*)", "bash(echo other-tool)"]
        await answer(owner, sid, "/bash echo remembered", "reject")  # asked again once deleted
