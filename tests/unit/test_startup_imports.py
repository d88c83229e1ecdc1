"""What `zeroclaw daemon` imports before it serves (issue 15): not Alembic or SQLAlchemy (the database opens on the
first call that needs it, app.storage.deferred), not the gateway's Starlette and uvicorn (only with the gateway on),
not the clients' rich or the openai provider's httpx. A fresh interpreter, so nothing else already imported them.
tests/e2e/test_e2e_startup.py checks the real daemon process.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "alembic",
    "sqlalchemy",
    "aiosqlite",
    "asyncpg",
    "starlette",
    "uvicorn",
    "websockets",
    "rich",
    "httpx",
    "pydantic",
    "tomlkit",
)


def _imported_after(code: str) -> list[str]:
    listed = f"sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})"
    probe = f"{code}\nimport json, sys\nprint(json.dumps({listed}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return list(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.req("R-PATH-7")
def test_the_daemon_and_cli_modules_import_nothing_heavy() -> None:
    assert _imported_after("import app.daemon, app.cli, rpc.methods, app.services") == []


@pytest.mark.req("R-PATH-7")
def test_the_version_is_known_without_the_package_metadata() -> None:
    """`--version` and `initialize`'s `serverVersion` read `app.__version__`: importlib.metadata costs ~10 ms."""
    code = (
        "import app.cli, app.services; app.cli._parser()\n"
        "import sys; assert 'importlib.metadata' not in sys.modules\n"
        "print(app.__version__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == importlib.metadata.version("zeroclaw")  # what pip installed: one source


ROOT = Path(__file__).resolve().parents[2]


def _imported_packages(path: Path) -> set[str]:
    """Top-level packages a module imports, wherever in it (TYPE_CHECKING blocks and functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.req("R-PATH-7")
def test_no_module_of_the_daemon_imports_pydantic() -> None:
    """Issue 15: importing pydantic costs a daemon start ~0.1 s, and its first `initialize` would pay it if a params
    model needed it. Every model is a msgspec Struct, the gateway's answer models too: pydantic is not a dependency,
    not even of `[dev]`."""
    offenders = sorted(
        str(path.relative_to(ROOT))
        for package in ("app", "rpc", "gateway", "migrations")
        for path in (ROOT / package).rglob("*.py")
        if "pydantic" in _imported_packages(path)
    )
    assert offenders == []


@pytest.mark.req("R-PATH-7")
def test_the_registry_builds_no_params_model_until_its_first_call() -> None:
    code = (
        "from rpc.core import registry as r\n"
        "from rpc.methods import build_registry\n"
        "registry = build_registry()\n"
        "assert r._NORMALISE == {}, r._NORMALISE\n"  # each model's key table is made by its first validation
        "spec = registry.get('session/list')\n"
        "assert spec.params_from(None) is spec.params_from({}) and list(r._NORMALISE) == []\n"
        "assert spec.params_from({'include_killed': True}).include_killed and list(r._NORMALISE) == [spec.params]\n"
        "import json; print(json.dumps(registry.names()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    # The method table as `initialize` lists it: the lazily built params models must not change it (issue 15).
    from rpc.methods import build_registry

    assert json.loads(done.stdout) == build_registry().names()


@pytest.mark.req("R-PATH-7")
@pytest.mark.parametrize("text", [None, "# mine\n[limits]\nmax_sessions = 7  # why\n\n[unknown]\nkept = true\n"])
def test_the_config_loads_without_tomlkit_and_the_first_write_edits_the_file_as_it_is(
    tmp_path: Path, text: str | None
) -> None:
    """tomllib reads config.toml at start; the tomlkit document that writes edit (comments and unknown keys
    kept) is parsed from the same bytes by the first write."""
    if text is not None:
        (tmp_path / "config.toml").write_text(text)
    code = (
        "import sys; from pathlib import Path; from app.config.store import ConfigStore\n"
        f"store = ConfigStore(Path({str(tmp_path)!r}))\n"
        f"assert store.current.limits.max_sessions == {7 if text else 64}\n"
        f"assert store.written() == { ({'limits': {'max_sessions': 7}, 'unknown': {'kept': True}} if text else {})!r}\n"
        "assert 'tomlkit' not in sys.modules\n"
        f"assert store._doc.as_string() == {text or ''!r}  # the first write stages into the file's own text\n"
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
