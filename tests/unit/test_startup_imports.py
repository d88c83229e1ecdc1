"""What `zeroclaw daemon` imports before it serves (issue 15): not Alembic or SQLAlchemy (the database opens on the
first call that needs it, app.storage.deferred), not the gateway's Starlette and uvicorn (only with the gateway on),
not the clients' rich or the openai provider's httpx. A fresh interpreter, so nothing else already imported them.
tests/e2e/test_e2e_startup.py checks the real daemon process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


# The method table as `initialize` lists it: the lazily built params models must not change it (issue 15).
METHODS = [
    "agents/status",
    "config/delete",
    "config/get",
    "config/list",
    "config/map-keys",
    "config/sections",
    "config/set",
    "config/set-many",
    "config/templates",
    "file/attach",
    "file/upload/begin",
    "file/upload/chunk",
    "file/upload/commit",
    "initialize",
    "logs/subscribe",
    "pairing/code",
    "pairing/create",
    "pairing/list",
    "pairing/revoke",
    "session/approve",
    "session/cancel",
    "session/close",
    "session/delete",
    "session/kill",
    "session/list",
    "session/list-acp",
    "session/messages",
    "session/new",
    "session/prompt",
    "status",
    "system/metrics",
]


@pytest.mark.req("R-PATH-7")
def test_the_registry_builds_no_params_model_until_its_first_call() -> None:
    code = (
        "from rpc.methods import build_registry\n"
        "registry = build_registry()\n"
        "specs = [registry.get(name) for name in registry.names()]\n"
        "built = sorted(s.name for s in specs if s.params.__pydantic_complete__)\n"
        "assert built == [], built\n"
        "spec = registry.get('session/list')\n"
        "assert spec.params_from(None) is spec.params_from({}) and spec.params.__pydantic_complete__\n"
        "import json; print(json.dumps(registry.names()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == METHODS


@pytest.mark.req("R-PATH-7")
def test_a_config_dir_without_config_toml_loads_without_tomlkit(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from app.config.store import ConfigStore\n"
        f"store = ConfigStore(Path({str(tmp_path)!r}))\n"
        "assert store.current.limits.max_connections == 1024\n"
        "assert 'tomlkit' not in sys.modules\n"
        "assert store._doc.as_string() == ''  # the first write stages into an empty document\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.req("R-PATH-7")
def test_a_listening_gateway_leaves_starlette_and_the_protocols_to_the_first_request() -> None:
    later = ("starlette.applications", "gateway.app", "h11", "httptools", "websockets")
    code = (
        "import asyncio, sys, types\n"
        "from app.config.schema import Config\n"
        "from app.daemon import DaemonOptions, _start_gateway\n"
        "async def main():\n"
        "    services = types.SimpleNamespace(config=Config(), gateway_url=None)\n"
        "    handle = await _start_gateway(DaemonOptions(gateway_port=0), services, None)\n"
        f"    loaded = sorted(m for m in sys.modules if m.startswith({later!r}))\n"
        "    await handle.close()\n"
        "    assert services.gateway_url == handle.url and loaded == [], loaded\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.req("R-PATH-7")
def test_the_files_service_is_loaded_by_its_first_use_not_at_start() -> None:
    code = "import app.daemon, rpc.methods, gateway.app\nimport sys; assert 'app.files' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_files_methods_cap_attachments_as_the_files_service_does() -> None:
    from app.files.service import MAX_ATTACHMENTS
    from rpc.methods import files

    assert files.MAX_ATTACHMENTS == MAX_ATTACHMENTS
