"""Admission: may this caller run this method here? (R-WIRE-3 order of checks, R-AUTH-5, R-FILE-1)

`admit` is a pure function of the method's declaration, the caller and the surface. `Admissions` remembers what
it admitted, per principal, surface and policy generation, so a connection's next call of the same method skips
the checks; any policy change moves the generation and starts empty tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rpc.dialect import STANDARD, Dialect
from rpc.errors import AuthRequired, Forbidden

if TYPE_CHECKING:
    from app.auth.policy import Principal
    from rpc.context import Surface
    from rpc.registry import MethodSpec

__all__ = ["Admissions", "admit", "check_surface", "require_grant"]


def admit(spec: MethodSpec[Any], principal: Principal | None, surface: Surface) -> None:
    """Raise the refusal of a call of `spec` by `principal` (None: not initialized) on `surface`, in the order the
    spec fixes (the method exists already; initialized, local-only, grant; params come next)."""
    check_surface(spec, principal is not None, surface)
    if spec.grant is not None:
        require_grant(principal, spec.grant)


def check_surface(spec: MethodSpec[Any], initialized: bool, surface: Surface) -> None:
    """The checks before the grant: they need no principal, so a connection runs them before it re-resolves its
    credential under a changed policy (which may itself refuse, -32010)."""
    if not initialized and spec.requires_init:
        raise AuthRequired("First call must be 'initialize'")
    if spec.local_only and surface.remote:
        raise Forbidden("This method is only served on the local endpoint", kind="local_only")


def require_grant(principal: Principal | None, grant: str) -> None:
    if principal is None:
        raise AuthRequired
    if not principal.has_grant(grant):
        raise Forbidden(f"Missing grant {grant}", grant=grant)


class Admissions:
    """The methods already admitted to a principal on a surface under one policy generation, as the caller's
    dialect runs them.

    Admission depends on nothing else, so every connection acting as the same principal on the same surface shares
    one table: with many connections, one shared table stays in the CPU cache where one per connection would not.
    """

    __slots__ = ("_generation", "_tables")

    def __init__(self) -> None:
        self._tables: dict[tuple[Principal, Surface, Dialect], dict[str, MethodSpec[Any]]] = {}
        self._generation = -1

    def table(
        self, principal: Principal, surface: Surface, generation: int, dialect: Dialect = STANDARD
    ) -> dict[str, MethodSpec[Any]]:
        if generation != self._generation:
            self._tables, self._generation = {}, generation
        return self._tables.setdefault((principal, surface, dialect), {})
