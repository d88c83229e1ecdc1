"""Python tools the tests drive that must not share the project's virtualenv (their pins fight ours), each in a
virtualenv of its own built on first use from a pinned requirements file, as `.ci/run` does before the run
(docs/development.md). Like tests/js_tools.py for npm.

The virtualenvs live under `$ZEROCLAW_TEST_CACHE` (default `~/.cache/zeroclaw-tests`), named after the hash of
their requirements file, so an edited pin builds a new one and an unchanged one is reused across runs and clones.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LITELLM_REQUIREMENTS = TESTS / "litellm" / "requirements.txt"
_READY = ".zeroclaw-ready"  # written last: a half-built venv (an interrupted install) is rebuilt


def cache_dir() -> Path:
    root = os.environ.get("ZEROCLAW_TEST_CACHE") or Path.home() / ".cache" / "zeroclaw-tests"
    return Path(root)


def venv_for(name: str, requirements: Path, *, timeout: float = 1200) -> Path:
    """The virtualenv `<cache>/<name>-<hash>` with `requirements` installed; its directory. Built in place under
    a lock (a venv's scripts name their own path, so it cannot be built elsewhere and moved)."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:12]
    venv = cache_dir() / f"{name}-{digest}"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run waits for the first's install, then reuses it
        if (venv / _READY).exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--no-input", "--quiet"]
        subprocess.run([*pip, "install", "-r", str(requirements)], check=True, timeout=timeout)
        (venv / _READY).write_text(digest)
    return venv


def litellm_venv() -> Path:
    """The LiteLLM proxy's virtualenv (tests/litellm/requirements.txt)."""
    return venv_for("litellm", LITELLM_REQUIREMENTS)


def main() -> None:
    """`python tests/py_tools.py`: build every tool venv now (what `.ci/run` does before the tests)."""
    print(litellm_venv())


if __name__ == "__main__":
    main()
