"""Crash safety of the atomic save (R-CFG-5): SIGKILL a process that keeps saving, at random moments."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# One helper process imports once, then forks a fresh writer per round; the test SIGKILLs that writer.
# (Forking keeps 30 rounds fast; each writer is a separate process killed mid-loop, as a crash would.)
CHILD = """
import os, sys
from pathlib import Path
from app.config.toml_file import save

path, a, b = Path(sys.argv[1]), Path(sys.argv[2]).read_text(), Path(sys.argv[3]).read_text()
save(path, a)
for _round in sys.stdin:
    pid = os.fork()
    if pid == 0:
        i = 0
        while True:
            save(path, b if i % 2 == 0 else a)
            i += 1
    print(pid, flush=True)
    os.waitpid(pid, 0)
    print("reaped", flush=True)
"""


def _content(tag: str) -> str:
    # Big enough (~300 KB) that a kill often lands in the middle of a write.
    lines = [f"# generation {tag}", "[limits]", "max_connections = 7", "", "[plugins.filler]"]
    lines += [f'k{i} = "{tag}-{i:06d}-{"x" * 40}"' for i in range(5000)]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_during_saves_leaves_old_or_new_file(tmp_path: Path) -> None:
    # R-CFG-5: never a torn file, always one of the two complete versions, always 0600
    a, b = _content("A"), _content("B")
    (tmp_path / "a.toml").write_text(a)
    (tmp_path / "b.toml").write_text(b)
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    path = cfg_dir / "config.toml"
    rng = random.Random(1234)
    seen: set[str] = set()
    helper = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(tmp_path / "a.toml"), str(tmp_path / "b.toml")],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert helper.stdin is not None and helper.stdout is not None
    try:
        for _ in range(30):
            helper.stdin.write("go\n")
            helper.stdin.flush()
            writer = int(helper.stdout.readline())
            time.sleep(rng.uniform(0, 0.02))  # a random point of the save: time is the subject
            os.kill(writer, signal.SIGKILL)
            assert helper.stdout.readline() == "reaped\n"
            text = path.read_text()
            assert text in (a, b)
            assert tomllib.loads(text)["limits"]["max_connections"] == 7
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            seen.add(text[:14])
    finally:
        helper.stdin.close()
        helper.wait(timeout=10)
        helper.stdout.close()
    # Stray temp files are the only possible residue, and they never shadow config.toml.
    assert all(p.name == "config.toml" or p.name.startswith(".config.toml.") for p in cfg_dir.iterdir())
    assert seen == {"# generation A", "# generation B"}
