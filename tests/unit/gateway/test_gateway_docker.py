"""docker/: the Dockerfile's shape (no engine runs here), the compose file, and the entrypoint's config edit."""

from __future__ import annotations

import importlib.util
import re
import stat
from pathlib import Path
from types import ModuleType

import pytest
import tomlkit
import yaml  # type: ignore[import-untyped]

DOCKER = Path(__file__).resolve().parents[3] / "docker"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


@pytest.fixture(scope="module")
def final_stage() -> list[tuple[str, str]]:
    steps = instructions((DOCKER / "Dockerfile").read_text())
    froms = [i for i, (word, _) in enumerate(steps) if word == "FROM"]
    assert len(froms) >= 2, "multi-stage build"
    assert all(steps[i][1].startswith("python:3.11-slim") for i in froms)
    return steps[froms[-1] :]


@pytest.mark.req("R-GW-1")
def test_runtime_runs_as_a_non_root_user(final_stage: list[tuple[str, str]]) -> None:
    users = [args for word, args in final_stage if word == "USER"]
    assert users, "the runtime stage sets USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


@pytest.mark.req("R-GW-1")
def test_healthcheck_probes_health_and_port_is_exposed(final_stage: list[tuple[str, str]]) -> None:
    checks = [args for word, args in final_stage if word == "HEALTHCHECK"]
    assert len(checks) == 1 and "CMD" in checks[0] and "healthcheck" in checks[0]
    assert ("EXPOSE", "42617") in final_stage
    volumes = [args for word, args in final_stage if word == "VOLUME"]
    assert volumes and "/data" in volumes[0]
    env = " ".join(args for word, args in final_stage if word == "ENV")
    assert "ZEROCLAW_GATEWAY_HOST=0.0.0.0" in env and "ZEROCLAW_ALLOWED_HOSTS=" in env


def test_compose_publishes_on_loopback_with_a_volume() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    service = compose["services"]["zeroclaw"]
    assert service["build"]["dockerfile"] == "docker/Dockerfile"
    assert service["ports"] == ["127.0.0.1:42617:42617"]
    assert any(v.endswith(":/data") for v in service["volumes"])
    assert "ZEROCLAW_ALLOWED_HOSTS" in service["environment"]


def load_entrypoint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zeroclaw_entrypoint", DOCKER / "entrypoint.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.req("R-GW-6")
def test_entrypoint_writes_gateway_settings_and_keeps_the_rest(tmp_path: Path) -> None:
    entrypoint = load_entrypoint()
    (tmp_path / "config.toml").write_text("# mine\n[limits]\nmax_sessions = 3  # keep\n")
    env = {"ZEROCLAW_GATEWAY_HOST": "0.0.0.0", "ZEROCLAW_ALLOWED_HOSTS": "zc.example, localhost,"}
    assert entrypoint.configure(tmp_path, env) is True
    text = (tmp_path / "config.toml").read_text()
    assert "# mine" in text and "max_sessions = 3  # keep" in text
    doc = tomlkit.parse(text)
    assert doc["gateway"]["host"] == "0.0.0.0"
    assert doc["gateway"]["allowed_hosts"] == ["zc.example", "localhost"]
    assert stat.S_IMODE((tmp_path / "config.toml").stat().st_mode) == 0o600
    assert entrypoint.configure(tmp_path, env) is False  # idempotent
    assert entrypoint.health_url(tmp_path) == ("http://127.0.0.1:42617/health", None)


def test_entrypoint_healthcheck_uses_tls_when_configured(tmp_path: Path) -> None:
    entrypoint = load_entrypoint()
    (tmp_path / "config.toml").write_text('[gateway]\nport = 8443\ntls_cert = "c.pem"\ntls_key = "k.pem"\n')
    url, context = entrypoint.health_url(tmp_path)
    assert url == "https://127.0.0.1:8443/health" and context is not None
    assert entrypoint.healthcheck(tmp_path / "nowhere") in (0, 1)


@pytest.mark.req("R-STORE-1")
def test_the_image_carries_the_postgresql_driver() -> None:
    """Pointing the container at PostgreSQL is a config change (`[storage] url`), not a rebuild."""
    steps = instructions((DOCKER / "Dockerfile").read_text())
    runs = [args for word, args in steps if word == "RUN"]
    assert any("pip wheel" in run and "'.[postgres]'" in run and "-c constraints.txt" in run for run in runs), runs
    assert any("pip install" in run and "'zeroclaw[postgres]'" in run for run in runs), runs
