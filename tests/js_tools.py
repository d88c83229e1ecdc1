"""The npm packages the tests drive (tests/js/package.json, pinned by tests/js/package-lock.json), installed on
first use with `npm ci` from the lock file, as `.ci/run` does before the run (docs/development.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"
NODE_MODULES = JS_DIR / "node_modules"
_INSTALLED = NODE_MODULES / ".package-lock.json"  # npm writes it at every install


def node_modules() -> Path:
    """tests/js/node_modules, installed from the lock file if it is missing or older than the lock."""
    lock = JS_DIR / "package-lock.json"
    if not _INSTALLED.exists() or _INSTALLED.stat().st_mtime < lock.stat().st_mtime:
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("these tests drive npm packages: install Node.js and npm (apt-get install nodejs npm)")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS_DIR, check=True, timeout=600)
    return NODE_MODULES


def run_node(script: str, payload: Any, timeout: float = 60) -> Any:
    """Run tests/js/`script` with `payload` as JSON on stdin; its JSON output."""
    node_modules()
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    done = subprocess.run(
        [node, str(JS_DIR / script)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return json.loads(done.stdout)


def json_file(relative: str) -> Any:
    """A JSON file of an installed package (`@open-rpc/spec/dist/1_3/schema.json`)."""
    return json.loads((node_modules() / relative).read_text(encoding="utf-8"))
