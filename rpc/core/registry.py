"""The method registry (R-ARCH-2): each method declared once, with its params model, the grant it needs, whether
it is local-only, and its handler. `initialize.methods`, admission (`rpc.core.admission`) and the REST adapters all
read it. Handlers are plain functions when they never suspend (the dispatcher runs them inline, on the read path)
and coroutine functions when they do (each call gets its own task). A plain function that must wait only sometimes
returns a coroutine then, which the dispatcher runs as the call's own task (`session/list`: answered from memory,
read from storage only when its list is not kept); a task costs the call a turn of the event loop, where the other
connections' work runs first.

A dialect (rpc.core.dialect) runs some methods its own way: `Adaptation` says what differs (params, handler, result,
errors) and `MethodSpec.adapted` makes the entry it runs, the one way every dialect adapts a method.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Annotated, Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

import msgspec

from app.auth.grants import parse_grant
from app.validation import field_error
from rpc.core.errors import InvalidParams

__all__ = [
    "Adaptation",
    "AfterReply",
    "Contract",
    "Handler",
    "MethodSpec",
    "NoParams",
    "Params",
    "Registry",
    "SessionId",
    "validate",
    "whole",
]


@dataclass(frozen=True, slots=True)
class AfterReply:
    """A handler result plus an action to run right after the reply is queued on the connection.

    For effects that must not be observable before the answer (R-SES-3: a connection starts watching a
    session only once its `session/new` answer is on its way, so no update can overtake it).
    """

    result: Any
    then: Callable[[], None]


class Params(msgspec.Struct, rename="camel", frozen=True):
    """Base of every params model: a msgspec Struct whose fields are named in camelCase on the wire; `validate`
    also takes their snake_case spellings (R-WIRE-8), and unknown keys are ignored. Frozen, so one instance can be
    shared (`MethodSpec.empty`); a subclass says `frozen=True` again, as mypy reads only each class's own
    (msgspec#657). A family whose errors name fields in snake_case (`file/*`) subclasses with `rename=None`.

    Validation is strict JSON typing (`"1"` is not an int) and stops at the first failing field (msgspec's way):
    docs/protocol.md.
    """

    # Spellings of a field besides camelCase and snake_case: field → every spelling, in the
    # order that wins when a frame holds several.
    also_spelled: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # Fields the peer cannot set: `derive` computes them; JSON schemas leave them out.
    derived_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def derive(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The `derived_fields`' values for the params `raw`, as the peer sent them."""
        return {}


class NoParams(Params, frozen=True):
    pass


def whole(pattern: str) -> msgspec.Meta:
    """A string constraint: all of the string matches `pattern`. Python's `$` (msgspec's `re.search`) also matches
    before a final newline, which the lookahead refuses; for a JSON-schema (ECMA) reader it changes nothing."""
    return msgspec.Meta(pattern=f"^{pattern}$(?!\\n)")


# A session id as every params model takes it (SPEC §7: what `session/new` may be given).
SessionId = Annotated[str, whole(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")]


P = TypeVar("P", bound=Params)
_convert = msgspec.convert  # a module global: one lookup per call instead of two
_UNKNOWN: Any = object()  # `MethodSpec.empty` before the first call without params


# A plain function (its result may be a coroutine, run as its own task), or a coroutine function. Its first
# argument is an `rpc.core.context.CallContext`, not named here: the context names the dialects, which name this.
Context = Any
Handler = Callable[[Context, P], Any]


@dataclass(frozen=True, slots=True)
class Adaptation:
    """How a dialect runs one method differently (`MethodSpec.adapted`); each None keeps the method's own."""

    params: type[Params] | None = None  # the params model its clients send
    handler: Handler[Any] | None = None  # a handler of its own, in place of the method's
    prepare: Callable[[Params], Params] | None = None  # its params as the handler takes them
    shape: Callable[[Context, Params, Any], Any] | None = None  # the handler's result as it answers it
    recover: Callable[[Context, Params, Exception], Any] | None = None  # an error: a result of its own, or raise


@dataclass(frozen=True, slots=True)
class Contract:
    """What a method answers, beyond what dispatching it needs: with the params model, grant and local-only flag,
    the contract `rpc.discover` publishes (rpc/contract/openrpc.py). Declared on the method's registry line."""

    summary: str
    # The result model: a Struct, another type msgspec describes, a tuple of the alternatives, or a function that
    # makes one of those on first use (None: a notification the client sends, never answered).
    result: Any
    errors: tuple[str, ...] = ()  # kinds (`rpc.core.error_kinds`) it answers besides those every method can
    notifications: tuple[str, ...] = ()  # daemon→client notifications it causes on the caller's connection
    server_requests: tuple[str, ...] = ()  # daemon→client requests it may make
    storage: bool = False  # it reads or writes the database: storage_unavailable, resources_exhausted

    def result_models(self) -> tuple[Any, ...]:
        """The result's models: one, or the alternatives it may be."""
        result = self.result() if callable(self.result) and not isinstance(self.result, type) else self.result
        return result if isinstance(result, tuple) else (result,)


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P]):
    name: str
    handler: Handler[P]
    params: type[P]
    grant: str | None  # None only for `initialize`
    local_only: bool = False
    requires_init: bool = True
    barrier: bool = False  # stop reading the connection until this call completes
    contract: Contract | None = field(default=None, compare=False)  # None: not described (an embedding's method)
    # Requests answered with a result (GET /metrics), in a cell a dialect's adapted entry shares:
    # one list increment on the fast path.
    answered: list[int] = field(default_factory=lambda: [0], repr=False, compare=False)
    is_async: bool = field(init=False)
    # The params for "no params" (None when {} is invalid), made by the first call without params:
    # made at registration, every model's types would be resolved at start-up (issue 15).
    empty: Params | None = field(init=False, default=_UNKNOWN)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.handler))

    def params_from(self, raw: object, *, strict: bool = True) -> Params:
        """The validated params model for a request's `params` (an object, an array, or absent/None);
        `strict=False` for params read from a query string (`validate`)."""
        if not raw:
            empty = self.empty
            if empty is _UNKNOWN:
                empty = self._empty()
            if empty is not None:
                return empty  # params models are frozen, so one shared instance is safe
            raw = {}
        elif isinstance(raw, list):
            raise InvalidParams("Invalid params: pass params as an object", errors=[{"field": "", "type": "by_name"}])
        return validate(self.params, raw, strict=strict)

    def adapted(self, adaptation: Adaptation | None) -> MethodSpec[Any]:
        """This entry as a dialect runs it: same name, grant and flags, one answer counter."""
        if adaptation is None:
            return self
        run = _adapted_handler(adaptation.handler or self.handler, adaptation)
        params = adaptation.params or self.params
        return MethodSpec(
            self.name, run, params, self.grant, self.local_only, self.requires_init, self.barrier, None, self.answered
        )

    def _empty(self) -> Params | None:
        try:
            empty: Params | None = msgspec.convert(self.params.derive({}), self.params)
        except msgspec.ValidationError:
            empty = None
        object.__setattr__(self, "empty", empty)
        return empty


def _adapted_handler(handler: Handler[Any], adaptation: Adaptation) -> Handler[Any]:
    prepare, shape, recover = adaptation.prepare, adaptation.shape, adaptation.recover
    if prepare is None and shape is None and recover is None:
        return handler

    def finish(ctx: Context, params: Params, result: Any) -> Any:
        if shape is None:
            return result
        if isinstance(result, AfterReply):
            return AfterReply(shape(ctx, params, result.result), result.then)
        return shape(ctx, params, result)

    async def finish_later(ctx: Context, params: Params, call: Awaitable[Any]) -> Any:
        try:
            result = await call
        except Exception as exc:
            if recover is None:
                raise
            return recover(ctx, params, exc)
        return finish(ctx, params, result)

    if inspect.iscoroutinefunction(handler):

        async def run_async(ctx: Context, params: Params) -> Any:
            if prepare is not None:
                params = prepare(params)
            return await finish_later(ctx, params, handler(ctx, params))

        return run_async

    def run(ctx: Context, params: Params) -> Any:
        if prepare is not None:
            params = prepare(params)
        try:
            result = handler(ctx, params)
        except Exception as exc:
            if recover is None:
                raise
            return recover(ctx, params, exc)
        if type(result) is CoroutineType:  # it has to wait this time (see the module's docstring)
            return finish_later(ctx, params, result)
        return finish(ctx, params, result)

    return run


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
        contract: Contract | None = None,
    ) -> Callable[[Handler[P]], Handler[P]]:
        """Declare `name`: its params model, the grant it needs (None only for `initialize` and `rpc.discover`),
        and what it answers (`contract`); decorates its handler."""
        if grant is not None and parse_grant(grant) != tuple(grant.split(":")):
            raise ValueError(f"method {name!r} declares a non-canonical grant")

        def register(handler: Handler[P]) -> Handler[P]:
            if name in self._methods:
                raise ValueError(f"method {name!r} registered twice")
            self._methods[name] = MethodSpec(name, handler, params, grant, local_only, requires_init, barrier, contract)
            return handler

        return register

    def get(self, name: str) -> MethodSpec[Any] | None:
        return self._methods.get(name)

    def names(self) -> list[str]:
        return sorted(self._methods)

    def specs(self) -> list[MethodSpec[Any]]:
        """Every entry, by name."""
        return [self._methods[name] for name in self.names()]

    def answered(self) -> dict[str, int]:
        """Requests answered with a result so far, by method (those answered at least once)."""
        return {name: spec.answered[0] for name, spec in self._methods.items() if spec.answered[0]}


def validate(model: type[P], data: object, *, strict: bool = True) -> P:
    """`data` (a JSON object) as `model`, or `InvalidParams` naming the first field that fails (R-WIRE-4), never
    its value; an entry of a map reads `*` (`env.*`). `strict=False` coerces strings to numbers and booleans, for
    query strings (gateway/rest/sessions.py)."""
    if isinstance(data, dict):
        data = (_NORMALISE.get(model) or _normaliser(model))(data)
    try:
        # Strict is msgspec's default: the keyword would cost ~10% of a small model's validation.
        if strict:
            return _convert(data, model)
        return _no_null_from_text(data, _convert(data, model, strict=False))
    except msgspec.ValidationError as exc:
        raise InvalidParams(errors=[field_error(exc)]) from None


def _no_null_from_text(data: object, params: P) -> P:
    """A query string cannot say null, but msgspec's lax mode reads the text "null" as None for a field that is
    not a string: refused as the type error it is (`?mode=null`)."""
    if isinstance(data, dict) and "null" in data.values():
        names = dict(zip(params.__struct_encode_fields__, params.__struct_fields__, strict=True))
        for key, value in data.items():
            if value == "null" and key in names and getattr(params, names[key]) is None:
                message = "Expected a value, got `null`"
                raise InvalidParams(errors=[{"field": key, "message": message, "type": "type_error"}])
    return params


# -- spellings
#
# msgspec reads one spelling of a field (`rename`), so a frame's keys are first made the model's
# own: the usual camelCase frame costs one `isdisjoint`; other spellings are renamed in one pass.

Normalise = Callable[[dict[str, Any]], dict[str, Any]]
_NORMALISE: dict[type[Params], Normalise] = {}  # made by each model's first validation, not at import (issue 15)


def _normaliser(model: type[Params]) -> Normalise:
    normalise = _NORMALISE[model] = _build(model)
    return normalise


def _build(model: type[Params]) -> Normalise:
    renames: dict[str, str] = {}  # each other spelling → the field's own (its encoded name)
    spellings: list[tuple[str, tuple[str, ...]]] = []  # own → every spelling, the first present wins
    nested: list[tuple[str, Normalise, bool]] = []  # own, the nested model's normaliser, whether a list of them
    for info in msgspec.structs.fields(model):
        own = info.encode_name
        camel = own if own != info.name else _camel(info.name)  # a snake_case family's other spelling
        names = model.also_spelled.get(info.name) or tuple(dict.fromkeys((camel, info.name)))
        others = [name for name in names if name != own]
        if others:
            renames |= dict.fromkeys(others, own)
            spellings.append((own, names))
        inner, many = _nested_model(info.type)
        if inner is not None and inner is not model:
            inner_normalise = _NORMALISE.get(inner) or _normaliser(inner)
            if inner_normalise is not _as_is:
                nested.append((own, inner_normalise, many))
    derive = model.derive if model.derived_fields else None
    if not renames and not nested and derive is None:
        return _as_is
    rename = renames.get

    def first_spelling_wins(data: dict[str, Any]) -> dict[str, Any]:
        # Two spellings of one field in a frame: the first of its spellings wins (pydantic's rule before).
        out = {key: value for key, value in data.items() if key not in renames}
        for own, names in spellings:
            present = [name for name in names if name in data]
            if present:
                out[own] = data[present[0]]
        return out

    def normalise(data: dict[str, Any]) -> dict[str, Any]:
        if derive is not None:
            data = {**data, **derive(data)}
        if not renames.keys().isdisjoint(data):
            out = {rename(key, key): value for key, value in data.items()}
            data = out if len(out) == len(data) else first_spelling_wins(data)
        for own, inner, many in nested:
            value = data.get(own)
            if many and isinstance(value, list):
                data = {**data, own: [inner(item) if isinstance(item, dict) else item for item in value]}
            elif isinstance(value, dict):
                data = {**data, own: inner(value)}
        return data

    return normalise


def _as_is(data: dict[str, Any]) -> dict[str, Any]:
    return data


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _nested_model(tp: Any) -> tuple[type[Params] | None, bool]:
    """The params model a field holds (itself, optional, or a list of them), and whether a list."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _nested_model(get_args(tp)[0])
    if origin is list:
        inner, _ = _nested_model(get_args(tp)[0])
        return inner, True
    if origin is Union or origin is types.UnionType:
        found = [branch for branch in map(_nested_model, get_args(tp)) if branch[0] is not None]
        return found[0] if len(found) == 1 else (None, False)
    return (tp, False) if isinstance(tp, type) and issubclass(tp, Params) else (None, False)
