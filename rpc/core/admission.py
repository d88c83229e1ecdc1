"""Admission: may this caller run this method here? (R-WIRE-3 order of checks, R-AUTH-5, R-FILE-1)

`admit` is a pure function of the method's declaration, the caller and the surface. `Admissions` remembers what
it admitted, per principal, surface and policy generation, so a connection's next call of the same method skips
the checks; any policy change moves the generation and starts empty tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rpc.core.dialect import STANDARD, Dialect
from rpc.core.errors import AuthRequired, Forbidden, MethodNotFound

if TYPE_CHECKING:
    from app.auth.authenticator import Authenticator
    from app.auth.policy import Principal
    from rpc.core.context import Authority, Surface
    from rpc.core.registry import MethodSpec, Registry

__all__ = ["Admissions", "Gate", "admit", "check_surface", "require_grant"]


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


class Gate:
    """Admission for the daemon's callers, memoized per principal, surface and dialect (`Admissions`).

    `admit` is the connection's check of a request; `admit_http` an HTTP caller's; `current` re-resolves a
    credential after a policy change (a revoked one signs the caller out: `-32010`).
    """

    __slots__ = ("_memo", "_registry", "auth")

    def __init__(self, registry: Registry, auth: Authenticator) -> None:
        self._registry = registry
        self.auth = auth  # its `generation` moves with every policy change
        self._memo = Admissions()

    def knows(self, method: str) -> bool:
        return self._registry.get(method) is not None

    def admit(self, authority: Authority, surface: Surface, method: str) -> MethodSpec[Any]:
        """The spec to run for `method`, as the caller's dialect runs it; raises the refusal."""
        spec = self._registry.get(method) or authority.dialect.own_method(method)
        if spec is None:
            raise MethodNotFound
        # The entry itself unless the dialect runs it its own way (`Dialect.adapt`).
        adapted: MethodSpec[Any] = authority.dialect.adapt(spec)
        admitted: MethodSpec[Any] | None = authority.admitted.get(method)
        if admitted is adapted and authority.generation == self.auth.generation:
            return adapted
        check_surface(spec, authority.initialized, surface)
        if spec.grant is not None:  # last, once the credential is current
            require_grant(self.current(authority, surface), spec.grant)
        if authority.initialized:
            authority.admitted[method] = adapted
        return adapted

    def admit_http(self, method: str, authority: Authority, surface: Surface) -> MethodSpec[Any]:
        spec = self._registry.get(method)
        if spec is None:
            raise LookupError(f"no RPC method {method!r}")  # a route naming a method that does not exist
        admit(spec, self.current(authority, surface), surface)
        return spec

    def current(self, authority: Authority, surface: Surface) -> Principal:
        """The caller under the policy in force now."""
        auth = self.auth
        if authority.generation != auth.generation:
            principal = auth.refresh(authority.credential)  # type: ignore[arg-type]  # what `sign_in` stored
            if principal is None:
                authority.sign_out()
                raise AuthRequired("The credential of this connection is no longer valid")
            authority.act_as(principal, auth.generation, self._table(principal, surface, authority.dialect))
        assert authority.principal is not None  # signed in implies a principal
        return authority.principal

    def recheck(self, authority: Authority, surface: Surface, grant: str) -> Principal:
        principal = self.current(authority, surface)
        require_grant(principal, grant)
        return principal

    def sign_in(
        self, authority: Authority, surface: Surface, credential: object, principal: Principal, dialect: Dialect
    ) -> None:
        """`initialize` authenticated the caller as `principal` under the policy in force now."""
        table = self._table(principal, surface, dialect)
        authority.sign_in(credential, principal, self.auth.generation, table, dialect)

    def _table(self, principal: Principal, surface: Surface, dialect: Dialect) -> dict[str, MethodSpec[Any]]:
        return self._memo.table(principal, surface, self.auth.generation, dialect)
