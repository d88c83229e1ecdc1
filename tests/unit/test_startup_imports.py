"""What `zeroclaw daemon` imports before it serves (issue 15): not Alembic or SQLAlchemy (the database opens on the
first call that needs it, app.storage.deferred), not the gateway's Starlette and uvicorn (only with the gateway on),
not the clients' rich or the openai provider's httpx. A fresh interpreter, so nothing else already imported them.
tests/e2e/test_e2e_startup.py checks the real daemon process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("alembic", "sqlalchemy", "aiosqlite", "asyncpg", "starlette", "uvicorn", "websockets", "rich", "httpx")


def _imported_after(code: str) -> list[str]:
    listed = f"sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})"
    probe = f"{code}\nimport json, sys\nprint(json.dumps({listed}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return list(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.req("R-PATH-7")
def test_the_daemon_and_cli_modules_import_nothing_heavy() -> None:
    assert _imported_after("import app.daemon, app.cli, rpc.methods, app.services") == []


@pytest.mark.req("R-PATH-7")
def test_building_the_parser_does_not_look_up_the_package_version() -> None:
    code = "import app.cli; app.cli._parser()\nimport sys; assert 'importlib.metadata' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
