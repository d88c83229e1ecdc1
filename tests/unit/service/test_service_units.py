"""`app.service.units` (R-SVC-3): the unit text, quoting, and the launchd plist. systemd-analyze checks the real
command's output in tests/e2e/test_e2e_service_install.py."""

from __future__ import annotations

import plistlib

import pytest

from app.service.units import MARK, UnitSpec, launchd_plist, service_unit, socket_unit


def spec(**kw: object) -> UnitSpec:
    base: dict[str, object] = {"command": ["/opt/zc/bin/zeroclaw"], "endpoint": "/home/u/.zeroclaw/data/daemon.sock"}
    return UnitSpec(**{**base, **kw})  # type: ignore[arg-type]


def line(text: str, key: str) -> str:
    return next(x for x in text.splitlines() if x.startswith(key + "="))


@pytest.mark.req("R-SVC-3")
def test_exec_start_quotes_and_escapes() -> None:
    unit = service_unit(spec(command=["/opt/my apps/python", "-m", "app.cli"], config_dir='/h/100%/$HOME/a"b'))
    assert line(unit, "ExecStart") == (
        'ExecStart="/opt/my apps/python" -m app.cli daemon --config-dir "/h/100%%/$$HOME/a\\"b"'
    )


@pytest.mark.req("R-SVC-3")
def test_on_demand_unless_persistent() -> None:
    assert line(service_unit(spec(socket_activation=True)), "ExecStart").endswith(" daemon --ephemeral")
    assert "--ephemeral" not in service_unit(spec(socket_activation=True, on_demand=False))
    assert "--ephemeral" not in service_unit(spec())


@pytest.mark.req("R-SVC-3")
def test_socket_unit_and_environment() -> None:
    unit = socket_unit(spec(endpoint="/run/100%/d.sock"))
    assert unit.encode().startswith(MARK)
    assert line(unit, "ListenStream") == "ListenStream=/run/100%%/d.sock"
    service = service_unit(spec(environment={"ZEROCLAW_SOCKET": "/x y/s"}))
    assert 'Environment="ZEROCLAW_SOCKET=/x y/s"' in service.splitlines()


@pytest.mark.req("R-SVC-3")
def test_launchd_plist_parses() -> None:
    agent = plistlib.loads(launchd_plist(spec(config_dir="/c"), "/c/data/logs/daemon.log"))
    assert agent["ProgramArguments"] == ["/opt/zc/bin/zeroclaw", "daemon", "--config-dir", "/c"]
    assert agent["StandardErrorPath"] == "/c/data/logs/daemon.log"
