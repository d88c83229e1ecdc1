"""Crash-recovery reliability loop (R-ACP-4, R-ACP-5): SIGKILL the daemon at random points of a turn, restart it
on the same config dir, resume the session and check the recovery invariants every time.

    python benchmarks/crash_loop.py                       # 24 rounds, seed from the clock, at most 180 s
    python benchmarks/crash_loop.py --rounds 40 --seed 7  # reproducible
    python benchmarks/crash_loop.py --time-limit 60       # stop starting new rounds after 60 s

Each round, on one long-lived ACP session (so history, trimming and earlier markers accumulate):

1. send `session/prompt` with a random turn kind: `/sleep S` (text streamed for S seconds), `/bash sleep S; echo
   …` (an auto-approved tool call that runs for S seconds, then a text step), or plain text (a fast turn);
2. wait a random delay (0 up to a bit past the end of the turn), noting when every `session/update` arrived;
3. SIGKILL the daemon, restart it on the same config dir and resume the session, alternately with
   `session/new {sessionId}` and with `session/prompt` directly (R-ACP-5 names both);
4. check the invariants (`check_round`):
   * the user prompt was checkpointed iff the daemon acknowledged the turn in any way (an update arrived);
   * exactly one `marker:"interrupted"` row iff the turn had not reached its terminal record when it was killed
     (read from the database file after the kill), none otherwise; it is the round's last row before the resume;
   * the text streamed more than 0.5 s before the kill is in the round's assistant rows, exactly once, and
     those rows hold nothing the turn would not have streamed (R-ACP-4);
   * resuming again adds nothing (no second marker);
   * a follow-up `/context` ends `end_turn`, never shows the marker and has no tool call without its result
     (the provider-safe replay, R-ACP-5/R-ACP-6).

Prints one line per round and a summary; exits 1 if any round broke an invariant. The e2e suite runs three seeded
rounds of the same code (`tests/e2e/test_e2e_crash.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
for _dir in (str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "e2e")):  # the harness and tests/db_backend.py
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from db_backend import query  # noqa: E402
from e2e_harness import Daemon, DaemonFactory  # noqa: E402
from session_client import Peer  # noqa: E402

__all__ = [
    "AGENT",
    "CHECKPOINT_GRACE_SECS",
    "CONFIG",
    "Kill",
    "RoundResult",
    "TimedPeer",
    "check_context_lines",
    "check_round",
    "kill_daemon",
    "markers",
    "pick_kill",
    "restart",
    "run_round",
    "transcript",
    "unfinished_turns",
]

# R-ACP-4: text streamed more than this long before a crash survives it.
CHECKPOINT_GRACE_SECS: Final = 0.5
MARKER: Final = "interrupted"
INTERRUPTED_PREFIX: Final = "Turn interrupted"

# The loop's session uses agent "auto" (bash needs no approval); trimming keeps snapshots coming, so recovery
# is exercised on top of a snapshot boundary too.
AGENT: Final = "auto"
CONFIG: Final = """\
[agents.auto]
auto_approve = ["bash"]

[tools]
bash_timeout_secs = 30

[context]
max_messages = 12
"""


class TimedPeer(Peer):
    """A `Peer` that also notes when each `session/update` arrived (`update_times[i]` for `updates[i]`)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.update_times: list[float] = []
        super().__init__(*args, **kw)

    @classmethod
    async def open(cls, daemon: Daemon, **kw: Any) -> TimedPeer:
        peer = await super().open(daemon, **kw)
        assert isinstance(peer, TimedPeer)
        return peer

    async def _route(self, frame: dict[str, Any]) -> None:
        if frame.get("method") == "session/update" and "id" not in frame:
            self.update_times.append(time.monotonic())
        await super()._route(frame)

    def text_before(self, mark: int, deadline: float) -> str:
        """The `agent_message_chunk` text of updates from `mark` on that arrived at or before `deadline`."""
        return "".join(
            u["text"]
            for u, t in zip(self.updates[mark:], self.update_times[mark:], strict=True)
            if u.get("type") == "agent_message_chunk" and t <= deadline
        )


def kill_daemon(daemon: Daemon) -> float:
    """SIGKILL the daemon; returns the monotonic time the signal was sent."""
    at = time.monotonic()
    daemon.send_signal(signal.SIGKILL)
    daemon.wait_exit()
    return at


def restart(factory: DaemonFactory, daemon: Daemon, env: dict[str, str] | None = None) -> Daemon:
    """A new daemon on the same config dir (same database), after `daemon` is gone."""
    assert not daemon.is_running()
    return factory.start(config_dir=daemon.config_dir, root=daemon.root, env=env)


async def transcript(peer: Peer, session_id: str) -> tuple[list[dict[str, Any]], int]:
    result = await peer.call("session/messages", {"sessionId": session_id, "limit": 10_000})
    return result["messages"], result["total"]


def markers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("marker") == MARKER]


def unfinished_turns(daemon: Daemon, session_id: str) -> int:
    """Turns of the session with no terminal record or an incomplete row, read from the database after a kill
    (only while no daemon runs on it), whichever backend it is. A turn that had reached its terminal record needs
    no marker."""
    url, sid = daemon.database_url, {"sid": session_id}
    open_turns = set(query(url, "SELECT turn_id FROM acp_turns WHERE session_id = :sid AND finished_at IS NULL", **sid))
    dangling = set(query(url, "SELECT turn_id FROM acp_transcript WHERE session_id = :sid AND NOT complete", **sid))
    return len(open_turns | dangling)


def check_context_lines(lines: list[str]) -> None:
    """What `/context` showed the provider: never a marker, never a tool call without its result."""
    assert lines and lines[-1] == "user: /context", lines
    for i, line in enumerate(lines):
        assert INTERRUPTED_PREFIX not in line and not line.startswith("marker"), f"marker sent to the provider: {lines}"
        assert line.split(":", 1)[0] in {"system", "user", "assistant", "tool"}, lines
        if line == "assistant: ":  # an assistant message that only calls tools: its results must follow
            assert i + 1 < len(lines) and lines[i + 1].startswith("tool: "), f"tool call without a result: {lines}"
        if line.startswith("tool: "):
            assert i > 0 and (lines[i - 1] == "assistant: " or lines[i - 1].startswith("tool: ")), (
                f"tool result answering no call: {lines}"
            )


# ------------------------------------------------------------------------------------------------ rounds


@dataclass(frozen=True)
class Kill:
    """Where a round kills: the prompt, how long after sending it, and what the full turn text would be."""

    kind: str  # "sleep", "bash" or "text"
    prompt: str
    delay: float
    full_text: Callable[[str], bool]  # whether the round's persisted assistant text is a prefix of a valid reply


def pick_kill(rng: random.Random, *, scale: float = 1.0) -> Kill:
    """A random kill point; `scale` shortens the turns (the e2e suite uses short ones)."""
    kind = rng.choice(["sleep", "sleep", "bash", "text"])
    if kind == "sleep":
        secs = round(rng.uniform(1.0, 2.0) * scale, 1)
        return Kill(kind, f"/sleep {secs:g}", rng.uniform(0.0, secs + 0.3), _sleep_reply(secs))
    if kind == "bash":
        secs = round(rng.uniform(0.8, 1.6) * scale, 1)
        word = f"bashdone{rng.randrange(10_000)}"
        full = f"Command output:\n{word}\n[exit code 0]"
        return Kill(kind, f"/bash sleep {secs:g}; echo {word}", rng.uniform(0.0, secs + 0.3), full.startswith)
    words = " ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randrange(3, 9)))
    full = f"You said: «{words}»"
    return Kill(kind, words, rng.uniform(0.0, 0.15), full.startswith)


def _sleep_reply(secs: float) -> Callable[[str], bool]:
    """Whether a text is a prefix of the `/sleep` reply: `Sleeping for S s`, one dot per 0.1 s tick, ` Done.`."""
    head, tail, most_dots = f"Sleeping for {secs:g} s", " Done.", int(secs / 0.1) + 2

    def ok(text: str) -> bool:
        if len(text) <= len(head):
            return head.startswith(text)
        if not text.startswith(head):
            return False
        rest = text[len(head) :]
        dots = len(rest) - len(rest.lstrip("."))
        return dots <= most_dots and tail.startswith(rest[dots:])

    return ok


@dataclass
class RoundResult:
    kind: str
    delay: float
    resume: str
    user_row: bool
    marker: bool
    kept_chars: int
    streamed_chars: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.kind:5} delay={self.delay:5.2f}s resume={self.resume:6} user_row={int(self.user_row)} "
            f"marker={int(self.marker)} kept={self.kept_chars}/{self.streamed_chars} chars ({self.seconds:.1f} s)"
        )


def check_round(
    rows: list[dict[str, Any]],
    *,
    kill: Kill,
    got_updates: bool,
    saw_complete: bool,
    unfinished: int,
    early_text: str,
    all_text: str,
) -> tuple[bool, bool, str]:
    """The invariants for the rows a round added before the follow-up; (user_row, marker, kept text)."""
    # The prompt row is the turn's first checkpoint: any update means it was committed (R-ACP-4).
    if got_updates:
        assert rows and rows[0]["role"] == "user" and rows[0]["content"] == kill.prompt, rows
    if not rows:
        assert unfinished == 0, "an unfinished turn left no row at all"
        return False, False, ""
    assert rows[0]["role"] == "user" and rows[0]["content"] == kill.prompt, rows
    found = markers(rows)
    expect_marker = unfinished > 0 and not saw_complete
    assert len(found) == (1 if expect_marker else 0), f"markers {found} (unfinished turns: {unfinished}): {rows}"
    if found:
        assert rows[-1] is found[0], f"the marker must follow the interrupted turn's rows: {rows}"
        assert found[0]["role"] == "marker", found
    kept = "".join(r["content"] for r in rows if r["role"] == "assistant")
    # R-ACP-4: what was streamed > 0.5 s before the kill survives, exactly once, in the row it was streamed into.
    assert kept.startswith(early_text), (
        f"lost text streamed >{CHECKPOINT_GRACE_SECS} s before the kill: {kept!r} vs {early_text!r}"
    )
    if early_text:
        everywhere = sum(r["content"].count(early_text) for r in rows if r["role"] != "user")
        assert everywhere == 1, f"text kept {everywhere} times: {rows}"
    # nothing that was never streamed: kept and what the client saw agree on their common part
    assert kept.startswith(all_text) or all_text.startswith(kept), (kept, all_text)
    assert kill.full_text(kept), f"kept text is not a prefix of the reply: {kept!r}"
    for r in rows:
        if r["role"] == "tool_result":
            assert len(r["content"].encode()) <= 65536, "tool output over the 64 KiB row limit"
    return True, bool(found), kept


async def run_round(
    factory: DaemonFactory,
    daemon: Daemon,
    session_id: str,
    kill: Kill,
    *,
    resume: str,
) -> tuple[Daemon, RoundResult]:
    """One crash round on `session_id` (already stored); returns the restarted daemon and what happened."""
    started = time.monotonic()
    peer = await TimedPeer.open(daemon)
    async with peer:
        _rows, base = await transcript(peer, session_id)
        mark, fut = await peer.start_prompt(session_id, kill.prompt)
        await asyncio.sleep(kill.delay)
        killed_at = kill_daemon(daemon)
        await peer.wait_for(lambda: peer.eof, 3.0, what="EOF after the kill")
        if fut.done() and not fut.cancelled():
            fut.exception()  # retrieved: the connection died with the daemon
        got_updates = len(peer.updates) > mark
        saw_complete = any(u.get("type") == "turn_complete" for u in peer.updates[mark:])
        early_text = peer.text_before(mark, killed_at - CHECKPOINT_GRACE_SECS)
        all_text = peer.text_before(mark, float("inf"))
    unfinished = unfinished_turns(daemon, session_id)
    daemon = restart(factory, daemon)
    async with await Peer.open(daemon) as follower:
        if resume == "new":
            opened = await follower.new_session(sessionId=session_id)
            assert opened["resumed"] is True, opened
            rows, total = await transcript(follower, session_id)
            assert opened["messageCount"] == total, (opened, total)
            follow = await follower.prompt(session_id, "/context", timeout=15)
        else:
            follow = await follower.prompt(session_id, "/context", timeout=15)
            rows, total = await transcript(follower, session_id)
            rows, total = rows[:-2], total - 2  # without the follow-up's own rows
        round_rows = [r for r in rows if r["index"] >= base]
        assert [r["index"] for r in round_rows] == list(range(base, total)), "indexes must stay dense and stable"
        user_row, marker, kept = check_round(
            round_rows,
            kill=kill,
            got_updates=got_updates,
            saw_complete=saw_complete,
            unfinished=unfinished,
            early_text=early_text,
            all_text=all_text,
        )
        assert follow.result["stopReason"] == "end_turn", follow.result
        check_context_lines(follow.result["content"].splitlines())
        # resuming again adds nothing: the marker is appended once (R-ACP-5)
        again = await follower.new_session(sessionId=session_id)
        after, after_total = await transcript(follower, session_id)
        assert again["messageCount"] == after_total == total + 2, (again, after_total, total)
        assert len(markers(after)) == len(markers(rows)), "resuming twice added a marker"
    return daemon, RoundResult(
        kill.kind, kill.delay, resume, user_row, marker, len(kept), len(all_text), time.monotonic() - started
    )


# ------------------------------------------------------------------------------------------------ main


async def _main(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    print(f"crash loop: {args.rounds} rounds, seed {seed}, time limit {args.time_limit:g} s", flush=True)
    factory = DaemonFactory()
    results: list[RoundResult] = []
    failures: list[str] = []
    started = time.monotonic()
    try:
        daemon = factory.start(CONFIG)
        async with await Peer.open(daemon) as peer:
            session_id = (await peer.new_session(agentAlias=AGENT))["sessionId"]
        for n in range(1, args.rounds + 1):
            if time.monotonic() - started > args.time_limit:
                print(f"time limit reached after {n - 1} rounds", flush=True)
                break
            kill = pick_kill(rng, scale=args.scale)
            resume = "new" if n % 2 else "prompt"
            try:
                daemon, result = await asyncio.wait_for(
                    run_round(factory, daemon, session_id, kill, resume=resume), args.round_timeout
                )
            except (AssertionError, TimeoutError) as exc:
                failures.append(f"round {n} ({kill.kind} {kill.prompt!r} delay={kill.delay:.2f}s): {exc!r}")
                print(f"{n:3} FAIL {failures[-1][:400]}", flush=True)
                # start over on a fresh daemon and session so one failure does not cascade
                for d in factory.daemons:
                    d.kill()
                daemon = factory.start(CONFIG)
                async with await Peer.open(daemon) as peer:
                    session_id = (await peer.new_session(agentAlias=AGENT))["sessionId"]
                continue
            results.append(result)
            print(f"{n:3} ok   {result.line()}", flush=True)
    finally:
        factory.close()
    elapsed = time.monotonic() - started
    by_kind = {k: sum(1 for r in results if r.kind == k) for k in ("sleep", "bash", "text")}
    print()
    print(f"rounds: {len(results) + len(failures)} in {elapsed:.1f} s (seed {seed})")
    print(f"  passed: {len(results)}   failed: {len(failures)}")
    print(f"  kinds: {by_kind}")
    print(f"  markers appended: {sum(r.marker for r in results)}   rounds with no checkpoint yet: "
          f"{sum(not r.user_row for r in results)}")  # fmt: skip
    if results:
        kept = sum(r.kept_chars for r in results)
        streamed = sum(r.streamed_chars for r in results)
        print(f"  assistant text kept / seen by the client: {kept} / {streamed} chars")
    for failure in failures:
        print(f"  FAIL {failure}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=24, help="kill points to try (default 24)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: the clock)")
    parser.add_argument("--time-limit", type=float, default=180.0, help="start no round after this many seconds")
    parser.add_argument("--round-timeout", type=float, default=30.0, help="a round taking longer fails")
    parser.add_argument("--scale", type=float, default=1.0, help="turn length factor (default 1.0)")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
