"""Every module of `app/`, `rpc/` and `gateway/` imports on its own, first, in an interpreter that has imported
nothing of ours (issue 38 §2): as `python -c "import X"` would, one module per interpreter.

Fast: one fresh interpreter (the prober) imports only the standard library, then forks a child per module, a few
at a time; each child imports its one module and reports. A fork of an interpreter that has loaded nothing of ours
is as fresh as a new one for our modules and their dependencies. Nothing is preloaded, third-party libraries
included (preloading SQLAlchemy would halve the time, but could hide a module that uses a library's submodule it
never imported); the time is that of the imports themselves, about 0.1 s of CPU per module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "rpc", "gateway")

# Modules that cannot be imported alone on purpose, each with its reason.
NOT_ALONE = {
    "app.cli.__main__": "runs the command line when imported (`python -m app.cli`); `app.cli` is imported instead",
}

PROBER = r"""
import json, os, sys, traceback

def child(name):
    os.dup2(2, 1)  # what a module prints goes to stderr; stdout carries the report
    try:
        __import__(name)
    except BaseException:
        return traceback.format_exc()[-4000:]
    return None

names = json.loads(sys.stdin.read())
assert not [m for m in sys.modules if m.split(".")[0] in ("app", "rpc", "gateway")], "the prober must be fresh"
width = int(sys.argv[1])
running = {}  # pid -> (name, read end)
failures = {}
pending = list(reversed(names))
while pending or running:
    while pending and len(running) < width:
        name = pending.pop()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            error = child(name)
            os.write(write, (error or "").encode())
            os._exit(1 if error else 0)
        os.close(write)
        running[pid] = (name, read)
    pid, status = os.wait()
    name, read = running.pop(pid)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    if status:
        failures[name] = b"".join(chunks).decode() or f"exit status {status}"
print(json.dumps(failures))
"""


def all_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def probe(names: list[str]) -> dict[str, str]:
    """Each module of `names` imported alone in a fork of one fresh interpreter: the failures, with tracebacks."""
    done = subprocess.run(
        [sys.executable, "-c", PROBER, str(os.cpu_count() or 1)],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=True,
    )
    failures: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return failures


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="the prober forks a child per module (POSIX)")


@needs_fork
@pytest.mark.req("R-ARCH-1")
def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    names = [name for name in all_modules() if name not in NOT_ALONE]
    assert len(names) > 100 and "app.daemon" in names and "gateway" in names
    failures = probe(names)
    report = "\n\n".join(f"{name}:\n{error.strip()}" for name, error in sorted(failures.items()))
    assert not failures, f"{len(failures)} module(s) fail to import alone:\n{report}"


@needs_fork
def test_the_prober_reports_each_failure_alone_and_nothing_leaks_between_children() -> None:
    failures = probe(["json", "no_such_module_of_ours", "app.paths", "rpc.does_not_exist"])
    assert sorted(failures) == ["no_such_module_of_ours", "rpc.does_not_exist"]
    assert "ModuleNotFoundError" in failures["rpc.does_not_exist"]
