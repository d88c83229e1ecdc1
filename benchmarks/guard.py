"""What the guard costs (issue 40, R-GUARD-5): a sandboxed `bash echo` against an unsandboxed one (p50 difference,
budget 15 ms), and one permission check against 200 rules (budget 50 µs).

    python benchmarks/guard.py [--calls 60] [--checks 20000]

The wall-clock p50 depends on the machine's load (on a shared 2-core VM it varied 10 to 25 ms between runs); the CPU
time of the processes a call starts (`RUSAGE_CHILDREN`) and the minimum do not, and show the sandbox's own cost.
The bash calls go through `BashTool.run` as a turn makes them (the tool's own process handling included), sandboxed
and not, alternating so a slow spell of the machine hits both. The rule check is `RuleSet.evaluate` on a compound
command (`git status && ls -la src | head`: tree-sitter reads it, every part is matched), a simple allowed one, and
a `write_file` path, after a warm-up (the tree-sitter import and the grouped patterns are built once per turn).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from app.agents.base import ToolContext
from app.agents.permissions import RuleSet, rules_from_lists
from app.agents.sandbox import SandboxHost
from app.agents.sandbox.limits import Limits
from app.agents.sandbox.probe import bwrap_problem
from app.agents.tools.bash import BashTool


class _NoClient:
    async def elicit(self, **_: object) -> object:  # never asked: bash does not elicit
        raise NotImplementedError


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def bash_overhead(calls: int) -> dict[str, dict[str, float]]:
    tool = BashTool()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp)
        host = SandboxHost([root / "cfg", root / "data"])
        limits = Limits(256, 4 << 30, 1 << 30, 600)
        sandbox = host.sandbox("bwrap", "workspace-write", limits)
        workspace = root / "data" / "workspaces" / "default"
        plain = ToolContext("s", workspace, _NoClient())  # type: ignore[arg-type]
        boxed = ToolContext("s", workspace, _NoClient(), sandbox=sandbox)  # type: ignore[arg-type]
        times: dict[str, list[float]] = {"plain": [], "boxed": []}
        cpu: dict[str, list[float]] = {"plain": [], "boxed": []}
        for i in range(calls + 5):
            for name, context in (("plain", plain), ("boxed", boxed)):
                cpu_before = _children_cpu_ms()
                start = time.perf_counter()
                out = await tool.run({"command": "echo hi"}, context)
                elapsed = (time.perf_counter() - start) * 1000
                assert out.startswith("hi\n"), out
                if i >= 5:  # warm-up
                    times[name].append(elapsed)
                    cpu[name].append(_children_cpu_ms() - cpu_before)
    return {
        name: {"p50": statistics.median(times[name]), "min": min(times[name]), "cpu": statistics.mean(cpu[name])}
        for name in times
    }


def rule_check(checks: int) -> dict[str, float]:
    allow = [f"bash(tool{i} *)" for i in range(150)] + ["bash(git status*)", "bash(ls *)", "bash(head *)"]
    deny = [f"bash(danger{i} *)" for i in range(30)] + ["bash(rm *)"]
    ask = [f"bash(maybe{i} *)" for i in range(10)] + [f"write_file(src/dir{i}/**)" for i in range(6)]
    rules = rules_from_lists({"allow": allow, "ask": ask, "deny": deny}, "[permissions]")
    assert len(rules) == 200, len(rules)
    ruleset = RuleSet(rules)
    workspace = Path("/w")
    calls = {
        "compound bash (3 parts, allowed)": ("bash", {"command": "git status && ls -la src | head -n 5"}),
        "simple bash (allowed)": ("bash", {"command": "git status -s"}),
        "write_file path": ("write_file", {"path": "src/dir3/x.py"}),
    }
    out: dict[str, float] = {}
    for label, (tool, arguments) in calls.items():
        for _ in range(200):  # warm-up: the tree-sitter import, the grouped patterns
            ruleset.evaluate(tool, arguments, default="ask", workspace=workspace)
        start = time.perf_counter()
        for _ in range(checks):
            ruleset.evaluate(tool, arguments, default="ask", workspace=workspace)
        out[label] = (time.perf_counter() - start) / checks * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--checks", type=int, default=20_000)
    args = parser.parse_args()
    print("| measure | value | budget |")
    print("|---|---|---|")
    for label, micros in rule_check(args.checks).items():
        print(f"| rule check, 200 rules, {label} | {micros:.1f} µs | ≤ 50 µs |")
    if (problem := bwrap_problem()) is not None:
        print(f"(no sandbox here: {problem})", file=sys.stderr)
        return
    m = asyncio.run(bash_overhead(args.calls))
    plain, boxed = m["plain"], m["boxed"]
    for label, row in (("unsandboxed", plain), ("sandboxed (bwrap, workspace-write)", boxed)):
        figures = f"{row['p50']:.1f} / {row['min']:.1f} / {row['cpu']:.1f} ms"
        print(f"| `bash echo hi` {label}: p50 / min / CPU | {figures} | |")
    print(f"| sandbox overhead, p50 difference | {boxed['p50'] - plain['p50']:.1f} ms | ≤ 15 ms |")


if __name__ == "__main__":
    main()
