"""The method registry (R-ARCH-2): each method declared once, with its params model, the grant it needs, whether
it is local-only, and its handler. `initialize.methods`, admission (`rpc.admission`) and the REST adapters all
read it. Handlers are plain functions when they never suspend (the dispatcher runs them inline, on the read path)
and coroutine functions when they do (each call gets its own task).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from app.auth.grants import parse_grant
from rpc.errors import InvalidParams

if TYPE_CHECKING:
    from rpc.context import CallContext

__all__ = ["AfterReply", "Handler", "MethodSpec", "NoParams", "Params", "Registry", "SessionId", "validation_errors"]


@dataclass(frozen=True, slots=True)
class AfterReply:
    """A handler result plus an action to run right after the reply is queued on the connection.

    For effects that must not be observable before the answer (R-SES-3: a connection starts watching a
    session only once its `session/new` answer is on its way, so no update can overtake it).
    """

    result: Any
    then: Callable[[], None]


class Params(BaseModel):
    """Base of every params model: camelCase and snake_case both accepted (R-WIRE-8); unknown keys ignored.

    `defer_build`: a model's validator is built by its first validation, not when its module is imported, so a
    daemon start (issue 15) does not pay for the ~40 models of families it has not been called on yet.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
        hide_input_in_errors=True,
        defer_build=True,
    )


class NoParams(Params):
    pass


# A session id as every params model takes it (SPEC §7: what `session/new` may be given).
SessionId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")]


P = TypeVar("P", bound=Params)
_UNKNOWN: Any = object()  # `MethodSpec.empty` before the first call without params


Handler = Callable[["CallContext", P], Any]  # a plain function, or a coroutine function (run as its own task)


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P]):
    name: str
    handler: Handler[P]
    params: type[P]
    grant: str | None  # None only for `initialize`
    local_only: bool = False
    requires_init: bool = True
    barrier: bool = False  # stop reading the connection until this call completes
    # Requests answered with a result (GET /metrics), in a cell that a dialect's adapted entry shares: the spec is
    # at hand on the fast path, so counting here costs one list increment (benchmarks/hotpath.py).
    answered: list[int] = field(default_factory=lambda: [0], repr=False, compare=False)
    is_async: bool = field(init=False)
    # The params model's instance for "no params" (None when {} is invalid), made by the first call without
    # params: validating {} at registration would build every model at start-up (`Params.defer_build`).
    empty: Params | None = field(init=False, default=_UNKNOWN)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.handler))

    def params_from(self, raw: object) -> Params:
        """The validated params model for a request's `params` (an object, an array, or absent/None)."""
        if not raw:
            empty = self.empty
            if empty is _UNKNOWN:
                empty = self._empty()
            if empty is not None:
                return empty  # params models are frozen, so one shared instance is safe
        return _validate(self.params, raw)

    def _empty(self) -> Params | None:
        try:
            empty: Params | None = self.params.model_validate({})
        except ValidationError:
            empty = None
        object.__setattr__(self, "empty", empty)
        return empty


class Registry:
    def __init__(self) -> None:
        self._methods: dict[str, MethodSpec[Any]] = {}

    def method(
        self,
        name: str,
        *,
        params: type[P],
        grant: str | None,
        local_only: bool = False,
        requires_init: bool = True,
        barrier: bool = False,
    ) -> Callable[[Handler[P]], Handler[P]]:
        if grant is not None and parse_grant(grant) != tuple(grant.split(":")):
            raise ValueError(f"method {name!r} declares a non-canonical grant")

        def register(handler: Handler[P]) -> Handler[P]:
            if name in self._methods:
                raise ValueError(f"method {name!r} registered twice")
            self._methods[name] = MethodSpec(name, handler, params, grant, local_only, requires_init, barrier)
            return handler

        return register

    def get(self, name: str) -> MethodSpec[Any] | None:
        return self._methods.get(name)

    def names(self) -> list[str]:
        return sorted(self._methods)

    def answered(self) -> dict[str, int]:
        """Requests answered with a result so far, by method (those answered at least once)."""
        return {name: spec.answered[0] for name, spec in self._methods.items() if spec.answered[0]}


def _validate(model: type[Params], params: object) -> Params:
    if not params:
        params = {}
    elif isinstance(params, list):
        raise InvalidParams("Invalid params: pass params as an object", errors=[{"field": "", "type": "by_name"}])
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise InvalidParams(errors=validation_errors(exc)) from None


def validation_errors(exc: ValidationError) -> list[dict[str, str]]:
    """Name the failing fields with pydantic's message; never the offending value (R-WIRE-4)."""
    return [
        {"field": ".".join(str(p) for p in err["loc"]), "type": err["type"], "message": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
