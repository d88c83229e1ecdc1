"""Admission as a pure function of (method spec, principal, surface) (issue 14, R-ARCH-2, R-WIRE-3 order of checks).
The call path without import cycles: tests/unit/test_import_cycles.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rpc.core.admission import Admissions, admit
from rpc.core.context import Surface
from rpc.core.errors import AuthRequired, Forbidden
from rpc.core.registry import MethodSpec, NoParams


@dataclass(frozen=True)
class Holder:
    id: str
    grants: frozenset[str]

    def has_grant(self, grant: str) -> bool:
        return grant in self.grants


def spec(**kw: object) -> MethodSpec[NoParams]:
    fields = {"grant": "system:read", "local_only": False, "requires_init": True} | kw
    return MethodSpec("m", lambda ctx, params: None, NoParams, **fields)  # type: ignore[arg-type]


READER = Holder("reader", frozenset({"system:read"}))


@pytest.mark.req("R-WIRE-3")
def test_not_initialized_needs_initialize_first_whatever_else_is_wrong() -> None:
    with pytest.raises(AuthRequired):
        admit(spec(local_only=True, grant="config:update"), None, Surface.WEBSOCKET)
    admit(spec(grant=None, requires_init=False), None, Surface.WEBSOCKET)  # `initialize` itself


@pytest.mark.req("R-FILE-1")
@pytest.mark.parametrize("surface", [Surface.WEBSOCKET, Surface.HTTP])
def test_local_only_is_refused_off_the_local_endpoint_before_the_grant(surface: Surface) -> None:
    with pytest.raises(Forbidden) as refused:
        admit(spec(local_only=True, grant="files:create"), READER, surface)  # type: ignore[arg-type]
    assert refused.value.data["kind"] == "local_only"
    with pytest.raises(Forbidden) as missing:
        admit(spec(local_only=True, grant="files:create"), READER, Surface.LOCAL)  # type: ignore[arg-type]
    assert missing.value.data == {"kind": "forbidden", "grant": "files:create"}


@pytest.mark.req("R-AUTH-5")
def test_the_grant_decides_and_nothing_else_is_consulted() -> None:
    for surface in Surface:
        admit(spec(), READER, surface)  # type: ignore[arg-type]
        with pytest.raises(Forbidden):
            admit(spec(grant="config:read"), READER, surface)  # type: ignore[arg-type]


@pytest.mark.req("R-AUTH-5")
def test_admission_tables_are_shared_per_principal_and_surface_and_start_empty_per_generation() -> None:
    tables = Admissions()
    first = tables.table(READER, Surface.LOCAL, 1)  # type: ignore[arg-type]
    assert tables.table(READER, Surface.LOCAL, 1) is first  # type: ignore[arg-type]
    assert tables.table(READER, Surface.WEBSOCKET, 1) is not first  # type: ignore[arg-type]
    first["m"] = spec()
    assert tables.table(READER, Surface.LOCAL, 2) == {}  # type: ignore[arg-type]
